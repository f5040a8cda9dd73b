CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_idle_probe(p_worker_name text, p_batch_limit integer)
RETURNS TABLE (lock_id integer, event_domain text, done_snapshot pg_snapshot, quiet boolean, more boolean,
               hot_txid xid8, hot_ceiling xid8)
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_idle_probe(p_worker_name, p_batch_limit): the caught-up poll's
    -- question, in one planned statement: about the call, the worker itself and the new rows
    -- of its domain. Returns the worker's lock_id, event_domain and done_snapshot, and
    -- quiet = true only when
    --   the batch limit is one a run accepts (1 to fn_iu_route_worker_max_batch: the run
    --   refuses the others, after a bad name, once the idle path has not answered),
    --   both gates are open (fn_iu_gate_open over the two keys, as the gate readers read them:
    --   one read of both rows, the rule applied to each; a missing row is closed, so both
    --   rows must be there and read open),
    --   no window is open, the cursor is no group member's (a member's run is decided by
    --   fn_iu_route_group_pass: its idle rule depends on its group's state), the caller's
    --   transaction has no transaction id (its own uncommitted rows are the full pass's
    --   business), no stored position lies ahead of this cluster's transaction ids
    --   (fn_iu_route_worker_cursor_ahead), the position is at or above the outbox's hot bound
    --   (fn_iu_outbox_hot_txid: below it, the outbox question, which looks at the open
    --   partitions only, cannot answer; the full pass does, and moves the position up once),
    --   the heartbeat is fresh (fn_iu_route_worker_beat_fresh: no beat is due), and the
    --   domain holds no new row at or above the position below the hot ceiling
    --   (fn_iu_route_worker_idle_new, half (b) of the outbox question up to
    --   fn_iu_outbox_hot_ceiling). The new-rows question is asked last (AND stops at the
    --   first false) and is planned over the hot partitions only: the hot bound and the
    --   ceiling are constants in its plan (one partition between two crossings, no Append);
    --   the position's xmax prunes the rest as it runs.
    -- more = the quiet answer is not the whole answer yet: the position lists a transaction
    --   in progress (its late commits, half (a), fn_iu_route_worker_idle_late, may be owed,
    --   and it may still run: the answer then names who holds the position), or this
    --   statement's snapshot passed the hot ceiling (txids crossed into the next partition
    --   since maintenance last moved it: rows may lie above it,
    --   fn_iu_route_worker_idle_above). The caller asks those only then: the common poll
    --   evaluates nothing else. Every function call here costs each poll a lookup and a
    --   privilege check when the statement starts, so the probe computes only what that
    --   poll needs.
    -- hot_txid, hot_ceiling = the two constants this statement was planned with
    --   (fn_iu_outbox_hot_txid, fn_iu_outbox_hot_ceiling). The questions the caller asks after
    --   it are planned when they run: a partition maintenance that commits in between moves
    --   the constants, and the rows between the old and the new one would be asked by neither
    --   statement. The caller trusts a quiet answer only when the constants are still these.
    -- The other half of the cluster sanity rule, the recorded system_identifier, is left to
    -- the full pass: reading it means reading the control file from disk (a fifth of an idle
    -- run), and it cannot hide anything here. A cursor from another cluster whose positions lie
    -- below this cluster's transaction ids sees every new event of this cluster as new (its
    -- txid is at or above the stored done_snapshot's xmax), so the first event, like the first
    -- due beat, sends the run to the full pass, which refuses with IU002 before it routes.
    -- Reads the cursor without the worker's lock: the caller takes the lock afterwards and
    -- only trusts a quiet answer. A run that committed between this statement's snapshot and
    -- the lock either changed nothing, or routed events: then this statement saw neither the
    -- new position nor those events as routed, and it saw them (committed before it began)
    -- as new rows, so it is not quiet and the full pass re-reads the cursor under the lock.
    -- No rows: the worker is not registered (the full pass says so, with the fix).
    -- Internal: inlinable SQL, executed by nobody but the owner; its one caller,
    -- fn_iu_route_worker_run, is SECURITY DEFINER with search_path pinned.
    -- ---------------------------------------------------------------------------------------
    SELECT c.lock_id, c.event_domain, c.done_snapshot,
           p_batch_limit >= 1 AND p_batch_limit <= iu_core.fn_iu_route_worker_max_batch()
           AND ARRAY(SELECT public.fn_iu_gate_open(g.value) FROM public.dot_config g
                  WHERE g.key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled')) = '{t,t}'::boolean[]
           AND c.window_snapshot IS NULL
           AND c.group_name IS NULL
           AND pg_current_xact_id_if_assigned() IS NULL
           AND NOT iu_core.fn_iu_route_worker_cursor_ahead(c)
           AND pg_snapshot_xmin(coalesce(c.done_snapshot, '1:1:'::pg_snapshot)) >= iu_core.fn_iu_outbox_hot_txid(c.event_domain)
           AND EXISTS (SELECT 1 FROM iu_core.fn_iu_route_worker_beat_fresh(p_worker_name, NULL))
           AND NOT EXISTS (SELECT 1 FROM iu_core.fn_iu_route_worker_idle_new(c.event_domain, c.done_snapshot)),
           pg_snapshot_xmin(coalesce(c.done_snapshot, '1:1:'::pg_snapshot)) < pg_snapshot_xmax(coalesce(c.done_snapshot, '1:1:'::pg_snapshot))
           OR pg_snapshot_xmax(pg_current_snapshot()) > iu_core.fn_iu_outbox_hot_ceiling(c.event_domain),
           iu_core.fn_iu_outbox_hot_txid(c.event_domain),
           iu_core.fn_iu_outbox_hot_ceiling(c.event_domain)
      FROM public.iu_route_worker_cursor c
     WHERE c.worker_name = p_worker_name
$$;
