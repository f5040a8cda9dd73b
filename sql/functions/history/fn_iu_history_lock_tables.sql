CREATE OR REPLACE FUNCTION iu_core.fn_iu_history_lock_tables(p_relations regclass[], p_modes text[])
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '20ms'
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_history_lock_tables(p_relations, p_modes) -> boolean: every lock a partition change
    -- needs, all at once or none. Relation i is locked in mode p_modes[i] (ONLY: never its
    -- partitions), in the order given. Each lock waits at most 20 ms; when one is not had in
    -- that time every lock this attempt took is released with it, and the attempt is repeated
    -- after a pause, at most 25 times (about a second). False when no attempt had them all.
    --
    -- Why this shape (the lock order, sql/functions/history/README.md): a producer or worker
    -- queued behind a lock request waits only while the request waits, so no insert waits
    -- more than 20 ms on a request of ours, plus the short time the caller then holds what it
    -- got (its DDL, then its commit). And a request that gives up after 20 ms can never close
    -- a deadlock with a reader that holds one of these tables and wants another: the reader's
    -- deadlock check runs after deadlock_timeout (1 s), long after ours has let go.
    -- Callers list the tables in the lock order: iu_route_attempt's before event_outbox's,
    -- each parent before its partitions, so that producers (who only write event_outbox)
    -- wait behind the last and shortest request only. Internal.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_attempt integer;
    i         integer;
BEGIN
    FOR v_attempt IN 1 .. 25 LOOP
        BEGIN
            FOR i IN 1 .. coalesce(cardinality(p_relations), 0) LOOP
                IF p_modes[i] NOT IN ('SHARE UPDATE EXCLUSIVE', 'ACCESS EXCLUSIVE') THEN
                    RAISE EXCEPTION 'fn_iu_history_lock_tables: lock mode % not used here', p_modes[i] USING ERRCODE = '22023';
                END IF;
                IF p_relations[i] IS NULL THEN   -- a table that went away meanwhile
                    RAISE EXCEPTION 'fn_iu_history_lock_tables: relation % of the lock list does not exist', i USING ERRCODE = '42P01';
                END IF;
                EXECUTE format('LOCK TABLE ONLY %s IN %s MODE', p_relations[i], p_modes[i]);
            END LOOP;
            RETURN true;              -- the block's locks stay with the transaction
        EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
            NULL;                     -- rolled back: this attempt's locks are released
        END;
        PERFORM pg_sleep(0.01 + random() * 0.03);
    END LOOP;
    RETURN false;
END;
$$;
