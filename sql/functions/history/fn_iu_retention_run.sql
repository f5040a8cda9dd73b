CREATE OR REPLACE FUNCTION public.fn_iu_retention_run(p_dry_run boolean DEFAULT true)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_retention_run(p_dry_run boolean DEFAULT true) -> jsonb
    -- Drops whole history partitions that retention allows, oldest first, and records each
    -- drop in iu_retention_ledger. A partition is dropped only when ALL hold:
    --   event_outbox partition
    --     (a) retention.event_outbox_days is set and the partition closed at least that many
    --         days ago (closed: every txid in its range finished, so every row in it is older);
    --     (b) it is closed (never the partition holding current inserts: its upper bound is at
    --         or below xmin of the current snapshot);
    --     (c) every registered route worker has passed all of it
    --         (fn_iu_retention_partition_unrouted is empty).
    --   iu_route_attempt partition (same bounds)
    --     (a) retention.route_attempt_days is set and it closed at least that many days ago;
    --     (b) closed;
    --     (c) the event_outbox partition of the same range is gone (dropped earlier or in this
    --         run): the attempts are the re-scan guard of those events, so they outlive them;
    --     (d) no open dead letter holds an event of that range (its replay writes there).
    -- Dead letters keep their whole event (event_snapshot), so no drop affects a replay.
    -- p_dry_run true (the default): nothing is dropped; the answer says what would be.
    -- Returns: dry_run, dropped[{table, partition, lower_txid, upper_txid, rows, closed_at}],
    --          kept[{table, partition, reason, [workers]}], retention{event_outbox_days,
    --          route_attempt_days}, lock_timeout.
    -- Takes the maintenance lock (waits at most 2 s for a running maintenance, else answers
    -- busy and lock_timeout, dropping nothing); each DROP waits at most 2 s for its lock
    -- (lock_timeout: the run stops there and says so).
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_outbox_days  bigint;
    v_attempt_days bigint;
    v_days         bigint;
    v_xmin         xid8;
    v_actor        text;
    p              public.iu_history_partition%ROWTYPE;
    v_workers      text[];
    v_reason       text;
    v_rows         bigint;
    v_dropped      jsonb := '[]';
    v_kept         jsonb := '[]';
    v_gone         text[] := '{}';    -- event_outbox ranges (lower::text) gone in this run
    v_timeout      boolean := false;
    v_old_lt       text;
BEGIN
    IF p_dry_run IS NULL THEN
        RAISE EXCEPTION 'fn_iu_retention_run: p_dry_run required' USING ERRCODE = '22023',
            HINT = 'SELECT fn_iu_retention_run(true) to see what would be dropped, fn_iu_retention_run(false) to drop it.';
    END IF;
    v_outbox_days  := iu_core.fn_iu_retention_config('fn_iu_retention_run', 'retention.event_outbox_days', 0, 36500);
    v_attempt_days := iu_core.fn_iu_retention_config('fn_iu_retention_run', 'retention.route_attempt_days', 0, 36500);
    v_actor := iu_core.fn_queue_actor(NULL, 'fn_iu_retention_run');
    v_old_lt := current_setting('lock_timeout');
    PERFORM set_config('lock_timeout', '2s', true);
    -- The maintenance lock, waited for at most 2 s like every lock here: a session that
    -- holds it in an open transaction (maintenance is granted to executors) must not hang
    -- the run for as long as that transaction lives.
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('iu_core.partition_maintain'));
    EXCEPTION WHEN lock_not_available THEN
        PERFORM set_config('lock_timeout', v_old_lt, true);
        RETURN jsonb_build_object('dry_run', p_dry_run, 'dropped', v_dropped, 'kept', v_kept,
                                  'lock_timeout', true, 'busy', true,
                                  'retention', jsonb_build_object('event_outbox_days', v_outbox_days,
                                                                  'route_attempt_days', v_attempt_days));
    END;
    -- closed_at must be current before ages are judged
    PERFORM iu_core.fn_iu_partition_record_closes();
    v_xmin := pg_snapshot_xmin(pg_current_snapshot());

    -- event_outbox first (an attempt partition waits for its events' partition), oldest first.
    FOR p IN SELECT * FROM public.iu_history_partition h
              ORDER BY h.table_name, h.upper_txid
    LOOP
        v_workers := NULL;
        v_days := CASE p.table_name WHEN 'event_outbox' THEN v_outbox_days ELSE v_attempt_days END;
        v_reason := CASE
            WHEN v_days IS NULL THEN 'retention_not_configured'
            WHEN p.closed_at IS NULL OR p.upper_txid > v_xmin THEN 'not_closed'
            WHEN p.closed_at > now() - make_interval(days => v_days::integer) THEN 'younger_than_retention'
        END;
        IF v_reason IS NULL AND p.table_name = 'event_outbox' THEN
            v_workers := iu_core.fn_iu_retention_partition_unrouted(p.lower_txid, p.upper_txid);
            IF cardinality(v_workers) > 0 THEN
                v_reason := 'cursor_not_passed';
            END IF;
        ELSIF v_reason IS NULL THEN
            IF EXISTS (SELECT 1 FROM public.iu_history_partition e
                        WHERE e.table_name = 'event_outbox'
                          AND e.lower_txid IS NOT DISTINCT FROM p.lower_txid AND e.upper_txid = p.upper_txid)
               AND NOT coalesce(p.lower_txid::text, 'min') = ANY (v_gone) THEN
                v_reason := 'events_still_kept';
            ELSIF EXISTS (SELECT 1 FROM public.iu_route_dead_letter d
                           WHERE d.resolved_at IS NULL
                             AND (d.event_snapshot->>'txid')::xid8 < p.upper_txid
                             AND (p.lower_txid IS NULL OR (d.event_snapshot->>'txid')::xid8 >= p.lower_txid)) THEN
                v_reason := 'open_dead_letter';
            END IF;
        END IF;
        IF v_reason IS NOT NULL THEN
            v_kept := v_kept || jsonb_strip_nulls(jsonb_build_object('table', p.table_name, 'partition', p.partition_name,
                                                                   'reason', v_reason, 'workers', to_jsonb(v_workers)));
            CONTINUE;
        END IF;

        EXECUTE format('SELECT count(*) FROM ONLY public.%I', p.partition_name) INTO v_rows;
        IF NOT p_dry_run THEN
            -- A DROP holds the parent ACCESS EXCLUSIVE until this transaction ends, which
            -- holds every producer. A caller that leaves the transaction open (psql
            -- without autocommit, a script) must not hold them for long: idle in this
            -- transaction for more than 2 s, the session is ended and the drops roll back
            -- (nothing is lost; the next run drops them again).
            PERFORM set_config('idle_in_transaction_session_timeout', '2s', true);
            BEGIN
                EXECUTE format('DROP TABLE public.%I', p.partition_name);
            EXCEPTION WHEN lock_not_available THEN
                v_timeout := true;
                EXIT;
            END;
            DELETE FROM public.iu_history_partition h WHERE h.partition_name = p.partition_name;
            INSERT INTO public.iu_retention_ledger (table_name, partition_name, lower_txid, upper_txid, row_count,
                                             closed_at, retention_days, dropped_by)
            VALUES (p.table_name, p.partition_name, p.lower_txid, p.upper_txid, v_rows, p.closed_at, v_days, v_actor);
        END IF;
        IF p.table_name = 'event_outbox' THEN
            v_gone := v_gone || coalesce(p.lower_txid::text, 'min');
        END IF;
        v_dropped := v_dropped || jsonb_build_object('table', p.table_name, 'partition', p.partition_name,
                                                     'lower_txid', p.lower_txid::text, 'upper_txid', p.upper_txid::text,
                                                     'rows', v_rows, 'closed_at', p.closed_at);
    END LOOP;

    PERFORM set_config('lock_timeout', v_old_lt, true);
    RETURN jsonb_build_object('dry_run', p_dry_run, 'dropped', v_dropped, 'kept', v_kept,
                              'lock_timeout', v_timeout,
                              'retention', jsonb_build_object('event_outbox_days', v_outbox_days,
                                                              'route_attempt_days', v_attempt_days));
END;
$$;
