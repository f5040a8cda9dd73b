CREATE OR REPLACE FUNCTION public.fn_iu_route_worker_run(p_worker_name text, p_batch_limit integer DEFAULT 100)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
-- The page statement's plan is the same for every call (two index range scans whose bounds
-- are parameters); re-planning it per call (the custom plans "auto" keeps choosing) costs
-- more than a batch of 100 takes to route. The setting holds for the helpers it calls.
SET plan_cache_mode = force_generic_plan
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_run(p_worker_name, p_batch_limit DEFAULT 100) -> jsonb summary
    -- One transactional pass of one worker, in the caller's transaction:
    --   1. the idle path: when fn_iu_route_worker_idle_probe says quiet (a batch limit a run
    --      accepts, both gates open, no window, a sane cursor at or above the outbox's hot
    --      bound, no beat due, no new row below the hot ceiling), no row is owed that the
    --      probe does not look for (asked only when it says there may be one, `more`: the
    --      late commits of a transaction the position lists in progress,
    --      fn_iu_route_worker_idle_late, once one of them has completed; the rows above the
    --      hot ceiling, fn_iu_route_worker_idle_above, once txids passed it), and the
    --      worker's lock is free, the run returns the idle summary without another
    --      statement: nothing claimed, nothing written (no transaction id, no WAL, no dead
    --      row version), the same summary the full pass gives an idle run
    --   2. otherwise the batch limit (22023; the worker name is checked by the full pass,
    --      since the idle probe finds no worker under a name that breaks it)
    --   3. and the full pass, fn_iu_route_worker_pass: busy, gated, cursor sanity (IU002),
    --      pages of decisions and audit rows, the cursor, the counters and the heartbeat
    -- The idle path is most of what a caught-up worker polling every second does, so it is
    -- kept to one probe statement (two when the position waits on a transaction that
    -- completed, or txids passed the hot ceiling since maintenance last moved it) and
    -- expressions; every case it does not answer
    -- exactly (a window open, a due heartbeat, a foreign cursor or rows, a closed gate, a busy
    -- lock, an unregistered worker) goes to the full pass, which decides it as before.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_lock_id integer;
    v_domain  text;
    v_done    pg_snapshot;
    v_waits   boolean;
    v_quiet   boolean;
    v_more    boolean;
    v_holders jsonb;
    v_hot     xid8;
    v_ceiling xid8;
BEGIN
    SELECT p.lock_id, p.event_domain, p.done_snapshot, p.quiet, p.more, p.hot_txid, p.hot_ceiling
      INTO v_lock_id, v_domain, v_done, v_quiet, v_more, v_hot, v_ceiling
      FROM iu_core.fn_iu_route_worker_idle_probe(p_worker_name, p_batch_limit) p;
    -- The probe asked about the new rows below the hot ceiling. It says when that is not the
    -- whole question (more), and the rest is asked only then, so the common poll compiles
    -- none of it (a condition is compiled in full on its first use in each transaction).
    IF v_quiet AND v_more THEN
        -- A position that lists a transaction in progress may owe its late commits, asked only
        -- when one of the transactions it lists has completed since. While all of them still
        -- run (a long transaction holding the position, poll after poll), each is in the
        -- current snapshot's in-progress list, so none is visible to it, and the question,
        -- which probes the outbox only for the listed ones now visible, cannot find a row.
        -- The lists are compared as text ('xmin:xmax:xip,...', ids in decimal, so equal ids
        -- are equal strings): an expression, where the question's plan over the open
        -- partitions costs about a sixth of an idle run to start.
        IF pg_snapshot_xmin(v_done) <> pg_snapshot_xmax(v_done) THEN
            -- One of them still runs exactly when some transaction still running has an id
            -- below done's xmax (every id below it was assigned before done was taken: one
            -- still running then was in its list), i.e. when the current snapshot's xmin lies
            -- below it: an expression, not a scan of the list. The answer then names them.
            v_waits := pg_snapshot_xmin(pg_current_snapshot()) < pg_snapshot_xmax(v_done);
            IF NOT (string_to_array(split_part(v_done::text, ':', 3), ',') COLLATE pg_catalog."C"
                    <@ string_to_array(split_part(pg_current_snapshot()::text, ':', 3), ',')) THEN
                v_quiet := NOT EXISTS (SELECT 1 FROM iu_core.fn_iu_route_worker_idle_late(v_domain, v_done, pg_current_snapshot()));
            END IF;
        END IF;
        -- Txids passed the hot ceiling (they crossed into the next partition since partition
        -- maintenance last moved it): the rows above it too, until the next maintenance.
        -- (This expression's snapshot is newer than the probe's, so it sees at least as far.)
        IF v_quiet AND pg_snapshot_xmax(pg_current_snapshot()) > v_ceiling THEN
            v_quiet := NOT EXISTS (SELECT 1 FROM iu_core.fn_iu_route_worker_idle_above(v_domain, v_done));
        END IF;
        -- The questions above are planned when they run, with the hot bound and ceiling as
        -- they are then; the probe was planned with v_hot and v_ceiling. A partition
        -- maintenance that committed in between (fn_iu_outbox_hot_refresh replaces the two
        -- constants) leaves the rows between the probe's ceiling and the new one asked by
        -- neither statement (and the late commits below a new hot bound). Quiet is trusted
        -- only when both are still the probe's; otherwise the full pass decides. (Read here,
        -- after those statements: a change they were planned with is seen here too.)
        IF v_quiet AND (iu_core.fn_iu_outbox_hot_ceiling(v_domain) <> v_ceiling
                        OR iu_core.fn_iu_outbox_hot_txid(v_domain) <> v_hot) THEN
            v_quiet := false;
        END IF;
    END IF;
    -- The lock only when all is quiet.
    IF v_quiet AND iu_core.fn_iu_route_worker_try_lock(v_lock_id) THEN
        -- As the full pass reports an idle run: one empty window opened and closed. The
        -- holders of the position it keeps are described only when one still runs; with
        -- none, everything but four keys of the answer is one constant of the plan.
        IF v_waits THEN
            v_holders := iu_core.fn_iu_route_worker_holders(v_done, NULL);
            RETURN iu_core.fn_iu_route_worker_summary(p_worker_name, v_domain, p_batch_limit,
                                              iu_core.fn_iu_route_run_tally_zero(),
                                              false, 1, 1, NULL, true, v_holders);
        END IF;
        RETURN iu_core.fn_iu_route_worker_summary(p_worker_name, v_domain, p_batch_limit,
                                          iu_core.fn_iu_route_run_tally_zero(),
                                          false, 1, 1, NULL, true, '[]'::jsonb);
    END IF;
    -- Not answered by the idle path. The worker name is checked by the full pass: a name that
    -- breaks the name rule was never registered, so the idle probe finds no worker for it and
    -- the full pass refuses it (22023). Only a bad batch limit must be refused here (the
    -- probe is never quiet for one), after a bad name (the order in which a call with both
    -- learns about them).
    IF p_batch_limit IS NULL OR p_batch_limit < 1 OR p_batch_limit > iu_core.fn_iu_route_worker_max_batch() THEN
        PERFORM iu_core.fn_iu_route_worker_require_name('fn_iu_route_worker_run', p_worker_name);
        RAISE EXCEPTION 'fn_iu_route_worker_run: p_batch_limit must be between 1 and %, got %',
            iu_core.fn_iu_route_worker_max_batch(), coalesce(p_batch_limit::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    -- The full pass takes the lock with the id the probe read (no lookup on the busy path's
    -- common case).
    RETURN iu_core.fn_iu_route_worker_pass(p_worker_name, p_batch_limit, v_lock_id);
END;
$$;
