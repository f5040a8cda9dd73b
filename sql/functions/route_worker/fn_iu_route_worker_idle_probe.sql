CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_idle_probe(p_worker_name text)
RETURNS TABLE (lock_id integer, event_domain text, done_snapshot pg_snapshot, done_waits boolean, quiet boolean)
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_idle_probe(p_worker_name): the caught-up poll's first question, about
    -- the worker itself, in one planned statement. Returns the worker's lock_id, event_domain
    -- and done_snapshot; done_waits: a transaction in done_snapshot's in-progress list is still
    -- running (the position waits on it, fn_iu_route_worker_holders says who it is); and
    -- quiet = true only when
    --   both gates are open (fn_iu_gate_open over the two keys, as the gate readers read them),
    --   no window is open, the cursor is no group member's (a member's run is decided by
    --   fn_iu_route_group_pass: its idle rule depends on its group's state), the caller's
    --   transaction has no transaction id (its own uncommitted rows are the full pass's
    --   business), no stored position lies ahead of this cluster's
    --   transaction ids (fn_iu_route_worker_cursor_ahead) and no heartbeat is due
    --   (fn_iu_route_worker_beat_due).
    -- The other half of the cluster sanity rule, the recorded system_identifier, is left to
    -- the full pass: reading it means reading the control file from disk (a fifth of an idle
    -- run), and it cannot hide anything here. A cursor from another cluster whose positions lie
    -- below this cluster's transaction ids sees every new event of this cluster as new (its
    -- txid is at or above the stored done_snapshot's xmax), so the first event, like the first
    -- due beat, sends the run to the full pass, which refuses with IU002 before it routes.
    -- The outbox is asked separately (fn_iu_route_worker_idle_rows), with the position as
    -- plain values, so partition pruning happens when the statement starts.
    -- Reads the cursor without the worker's lock: the caller takes the lock afterwards and
    -- only trusts a quiet answer. A run that committed between this statement's snapshot and
    -- the lock either changed nothing, or routed events that are visible to the outbox
    -- question's snapshot and not to the stale done_snapshot, so that question finds them
    -- and the full pass re-reads the cursor under the lock.
    -- No rows: the worker is not registered (the full pass says so, with the fix).
    -- Internal: inlinable SQL, executed by nobody but the owner; its one caller,
    -- fn_iu_route_worker_run, is SECURITY DEFINER with search_path pinned.
    -- ---------------------------------------------------------------------------------------
    SELECT c.lock_id, c.event_domain, c.done_snapshot,
           EXISTS (SELECT 1 FROM pg_snapshot_xip(c.done_snapshot) AS x(xip_txid)
                    WHERE NOT pg_visible_in_snapshot(x.xip_txid, pg_current_snapshot())),
           public.fn_iu_gate_open((SELECT g.value FROM public.dot_config g WHERE g.key = 'iu_core.routes_enabled'))
           AND public.fn_iu_gate_open((SELECT g.value FROM public.dot_config g WHERE g.key = 'iu_core.route_worker_enabled'))
           AND c.window_snapshot IS NULL
           AND c.group_name IS NULL
           AND pg_current_xact_id_if_assigned() IS NULL
           AND NOT iu_core.fn_iu_route_worker_cursor_ahead(c)
           AND NOT EXISTS (SELECT 1 FROM iu_core.fn_iu_route_worker_beat_due(p_worker_name, NULL))
      FROM public.iu_route_worker_cursor c
     WHERE c.worker_name = p_worker_name
$$;
