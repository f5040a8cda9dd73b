CREATE OR REPLACE FUNCTION public.fn_iu_retention_run(p_dry_run boolean DEFAULT true)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- The bound of any wait not covered below (a decision's read behind an operator's DDL on
-- these tables): restored when the function returns.
SET lock_timeout = '2s'
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
    --          route_attempt_days}, busy, [holder], lock_timeout, [blocked_by], more.
    --
    -- Never stalls producers or workers, never deadlocks with a reader (the lock order,
    -- sql/functions/history/README.md): it first decides what goes, counting each
    -- partition's rows, under the maintenance lock only (waited for at most 2 s; held by
    -- another session: busy, and holder names it). Then it takes every lock the drops need,
    -- ACCESS EXCLUSIVE on the parents, their default partitions and the partitions that go,
    -- all at once or none (fn_iu_history_lock_tables: no wait longer than 20 ms, about a
    -- second of attempts), drops and records them, and returns: the parents stay locked only
    -- for that catalog work and the caller's commit. When the locks were not free nothing
    -- is dropped: lock_timeout, blocked_by names who held them, and what would have gone is
    -- kept with reason lock_timeout until the next run. At most 16 partitions go per run
    -- (the rest: reason next_run, more: true), so the time the locks are held stays short.
    -- Every failure is an answer, never an error (a bad retention setting excepted: 22023).
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
    v_plan         jsonb := '[]';     -- what goes: [{table, partition, lower_txid, upper_txid, rows, closed_at, days}]
    v_kept         jsonb := '[]';
    v_gone         text[] := '{}';    -- event_outbox ranges (lower::text) gone in this run
    v_more         boolean := false;
    v_timeout      boolean := false;
    v_blocked      jsonb;
    v_rels         regclass[] := '{}';
    v_e            jsonb;
    v_t            text;
    c_max_drops    constant integer := 16;
BEGIN
    IF p_dry_run IS NULL THEN
        RAISE EXCEPTION 'fn_iu_retention_run: p_dry_run required' USING ERRCODE = '22023',
            HINT = 'SELECT fn_iu_retention_run(true) to see what would be dropped, fn_iu_retention_run(false) to drop it.';
    END IF;
    v_outbox_days  := iu_core.fn_iu_retention_config('fn_iu_retention_run', 'retention.event_outbox_days', 0, 36500);
    v_attempt_days := iu_core.fn_iu_retention_config('fn_iu_retention_run', 'retention.route_attempt_days', 0, 36500);
    v_actor := iu_core.fn_queue_actor(NULL, 'fn_iu_retention_run');
    -- The maintenance lock, waited for at most 2 s: a session that holds it in an open
    -- transaction (maintenance is granted to executors) must not hang the run for as long
    -- as that transaction lives. Waiting for it holds nothing anyone else waits for.
    IF NOT iu_core.fn_iu_history_lock(2000) THEN
        RETURN jsonb_strip_nulls(jsonb_build_object('holder', iu_core.fn_iu_history_lock_holder())) || jsonb_build_object(
            'dry_run', p_dry_run, 'dropped', '[]'::jsonb, 'kept', '[]'::jsonb,
            'lock_timeout', true, 'busy', true, 'more', false,
            'retention', jsonb_build_object('event_outbox_days', v_outbox_days, 'route_attempt_days', v_attempt_days));
    END IF;
    -- The decisions read the tables; a read that waits 2 s (behind an operator's DDL on them)
    -- ends the run with nothing dropped.
    BEGIN
        -- closed_at must be current before ages are judged
        PERFORM iu_core.fn_iu_partition_record_closes();
        v_xmin := pg_snapshot_xmin(pg_current_snapshot());

        -- 1. Decide (no table lock beyond a reader's). event_outbox first (an attempt partition
        --    waits for its events' partition), oldest first.
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
            IF v_reason IS NULL AND jsonb_array_length(v_plan) >= c_max_drops THEN
                v_reason := 'next_run';
                v_more := true;
            END IF;
            IF v_reason IS NOT NULL THEN
                v_kept := v_kept || jsonb_strip_nulls(jsonb_build_object('table', p.table_name, 'partition', p.partition_name,
                                                                       'reason', v_reason, 'workers', to_jsonb(v_workers)));
                CONTINUE;
            END IF;
            -- Counted now, before any lock that makes others wait: a closed partition gets no
            -- new events, and attempts only for open dead letters, which keep it.
            EXECUTE format('SELECT count(*) FROM ONLY public.%I', p.partition_name) INTO v_rows;
            IF p.table_name = 'event_outbox' THEN
                v_gone := v_gone || coalesce(p.lower_txid::text, 'min');
            END IF;
            v_plan := v_plan || jsonb_build_object('table', p.table_name, 'partition', p.partition_name,
                                                   'lower_txid', p.lower_txid::text, 'upper_txid', p.upper_txid::text,
                                                   'rows', v_rows, 'closed_at', p.closed_at, 'days', v_days);
        END LOOP;
    EXCEPTION WHEN lock_not_available THEN
        RETURN jsonb_build_object('blocked_by', iu_core.fn_iu_history_blockers(ARRAY[
                   to_regclass('public.iu_route_attempt'), to_regclass('public.event_outbox'), to_regclass('public.iu_history_partition')]),
               'dry_run', p_dry_run, 'dropped', '[]'::jsonb, 'kept', '[]'::jsonb, 'busy', false, 'lock_timeout', true, 'more', false,
               'retention', jsonb_build_object('event_outbox_days', v_outbox_days, 'route_attempt_days', v_attempt_days));
    END;

    -- 2. Drop: every lock at once or none, then catalog work only.
    IF NOT p_dry_run AND jsonb_array_length(v_plan) > 0 THEN
        FOREACH v_t IN ARRAY ARRAY['iu_route_attempt', 'event_outbox'] LOOP
            IF EXISTS (SELECT 1 FROM jsonb_array_elements(v_plan) e WHERE e->>'table' = v_t) THEN
                v_rels := v_rels || to_regclass('public.' || v_t) || to_regclass('public.' || v_t || '_default')
                          || ARRAY(SELECT to_regclass('public.' || quote_ident(e->>'partition'))
                                     FROM jsonb_array_elements(v_plan) e WHERE e->>'table' = v_t);
            END IF;
        END LOOP;
        BEGIN
            IF NOT iu_core.fn_iu_history_lock_tables(v_rels, array_fill('ACCESS EXCLUSIVE'::text, ARRAY[cardinality(v_rels)])) THEN
                RAISE EXCEPTION 'fn_iu_retention_run: the history tables'' locks were not free' USING ERRCODE = '55P03';
            END IF;
            PERFORM set_config('lock_timeout', '50ms', true);
            -- The parents stay locked until the caller's transaction ends. A caller that
            -- leaves it open (psql without autocommit, a script) must not hold producers:
            -- idle in it for more than 2 s, the session is ended and the drops roll back
            -- (nothing is lost; the next run drops them again).
            PERFORM set_config('idle_in_transaction_session_timeout', '2s', true);
            -- event_outbox's first: an attempt partition goes only after its events'.
            FOR v_e IN SELECT e FROM jsonb_array_elements(v_plan) e ORDER BY e->>'table', (e->>'upper_txid')::numeric LOOP
                EXECUTE format('DROP TABLE public.%I', v_e->>'partition');
                DELETE FROM public.iu_history_partition h WHERE h.partition_name = v_e->>'partition';
                INSERT INTO public.iu_retention_ledger (table_name, partition_name, lower_txid, upper_txid, row_count,
                                                        closed_at, retention_days, dropped_by)
                VALUES (v_e->>'table', v_e->>'partition', (v_e->>'lower_txid')::xid8, (v_e->>'upper_txid')::xid8,
                        (v_e->>'rows')::bigint, (v_e->>'closed_at')::timestamptz, (v_e->>'days')::integer, v_actor);
            END LOOP;
        EXCEPTION WHEN lock_not_available OR deadlock_detected OR object_in_use OR undefined_table THEN
            -- Nothing was dropped (the block rolled back, its locks with it).
            v_timeout := true;
            v_blocked := iu_core.fn_iu_history_blockers(v_rels);
            v_kept := v_kept || coalesce((SELECT jsonb_agg(jsonb_build_object('table', e->>'table', 'partition', e->>'partition',
                                                                            'reason', 'lock_timeout'))
                                            FROM jsonb_array_elements(v_plan) e), '[]'::jsonb);
            v_plan := '[]';
        END;
    END IF;

    RETURN jsonb_strip_nulls(jsonb_build_object('blocked_by', v_blocked)) || jsonb_build_object(
        'dry_run', p_dry_run,
        'dropped', coalesce((SELECT jsonb_agg(e - 'days') FROM jsonb_array_elements(v_plan) e), '[]'::jsonb),
        'kept', v_kept, 'busy', false, 'lock_timeout', v_timeout, 'more', v_more,
        'retention', jsonb_build_object('event_outbox_days', v_outbox_days, 'route_attempt_days', v_attempt_days));
END;
$$;
