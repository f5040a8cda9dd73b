CREATE OR REPLACE FUNCTION iu_core.fn_iu_adopt_lock(p_tables regclass[])
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_adopt_lock(tables) -> the attempts it took: ACCESS EXCLUSIVE on every table, for
    -- the rest of the caller's transaction, without ever making producers wait long. A lock
    -- request queued behind a long reader would make every INSERT queue behind it, so each
    -- attempt waits at most 200 ms (lock_timeout), then lets go and lets the queue drain for
    -- 50-200 ms before the next. After 30 s of attempts it gives up (55P03) naming the
    -- sessions in the way. Used by adoption and by the partitioning conversion, whose work
    -- under the lock is catalog changes only (milliseconds).
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_try     integer := 0;
    v_started timestamptz := clock_timestamp();
    v_old     text := current_setting('lock_timeout');
    v_rel     regclass;
    v_holders text;
BEGIN
    LOOP
        v_try := v_try + 1;
        BEGIN
            PERFORM set_config('lock_timeout', '200ms', true);
            FOREACH v_rel IN ARRAY p_tables LOOP
                EXECUTE format('LOCK TABLE %s IN ACCESS EXCLUSIVE MODE', v_rel);
            END LOOP;
            PERFORM set_config('lock_timeout', v_old, true);
            RETURN v_try;
        EXCEPTION WHEN lock_not_available THEN
            PERFORM set_config('lock_timeout', v_old, true);
            IF clock_timestamp() - v_started > interval '30 seconds' THEN
                SELECT string_agg(DISTINCT format('pid %s (%s, %s, in transaction for %s)', a.pid, a.usename, a.state,
                                                  date_trunc('second', now() - a.xact_start)), '; ')
                  INTO v_holders
                  FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
                 WHERE l.relation = ANY (p_tables) AND l.pid <> pg_backend_pid() AND l.granted;
                RAISE EXCEPTION 'iu-core: could not lock % in 30 s (% attempts of 200 ms)', p_tables, v_try
                    USING ERRCODE = '55P03',
                          DETAIL = coalesce('held by ' || v_holders, 'no holder found'),
                          HINT = 'End the long transactions that hold these tables (SELECT pg_terminate_backend(pid) ...) and run the migration again; it changed nothing.';
            END IF;
        END;
        PERFORM pg_sleep(0.05 + random() * 0.15);
    END LOOP;
END;
$$;
