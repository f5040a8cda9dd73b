CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_idle_probe(p_worker_name text)
RETURNS TABLE (lock_id integer, event_domain text, done_snapshot pg_snapshot, done_waits boolean, quiet boolean)
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_idle_probe(p_worker_name): the caught-up poll's question, in one
    -- planned statement: about the worker itself and about the new rows of its domain.
    -- Returns the worker's lock_id, event_domain and done_snapshot; done_waits: a transaction
    -- in done_snapshot's in-progress list is still running (the position waits on it,
    -- fn_iu_route_worker_holders says who it is); and quiet = true only when
    --   both gates are open (fn_iu_gate_open over the two keys, as the gate readers read them),
    --   no window is open, the cursor is no group member's (a member's run is decided by
    --   fn_iu_route_group_pass: its idle rule depends on its group's state), the caller's
    --   transaction has no transaction id (its own uncommitted rows are the full pass's
    --   business), no stored position lies ahead of this cluster's transaction ids
    --   (fn_iu_route_worker_cursor_ahead), the position is at or above the outbox's hot bound
    --   (fn_iu_outbox_hot_txid: below it, the outbox question, which looks at the open
    --   partitions only, cannot answer; the full pass does, and moves the position up once),
    --   no heartbeat is due (fn_iu_route_worker_beat_due), and the domain holds no new row
    --   at or above the position (fn_iu_route_worker_idle_new, half (b) of the outbox
    --   question; the caller asks half (a), the late commits, fn_iu_route_worker_idle_late,
    --   when the position lists a transaction in progress). The new-rows question is asked
    --   last (AND stops at the first false) and is planned over the open partitions only: the
    --   hot bound is a constant in its plan, and the statement's snapshot xmax prunes the
    --   partitions ahead when the statement starts; the position's xmax prunes the rest as it
    --   runs.
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
           -- A transaction of done's in-progress list still runs exactly when some
           -- transaction still running has an id below done's xmax (every id below it was
           -- assigned before done was taken: one still running then was in its list), i.e.
           -- when the current snapshot's xmin lies below done's xmax: an expression, not a
           -- scan of the list.
           pg_snapshot_xmin(pg_current_snapshot()) < pg_snapshot_xmax(coalesce(c.done_snapshot, '1:1:'::pg_snapshot)),
           public.fn_iu_gate_open((SELECT g.value FROM public.dot_config g WHERE g.key = 'iu_core.routes_enabled'))
           AND public.fn_iu_gate_open((SELECT g.value FROM public.dot_config g WHERE g.key = 'iu_core.route_worker_enabled'))
           AND c.window_snapshot IS NULL
           AND c.group_name IS NULL
           AND pg_current_xact_id_if_assigned() IS NULL
           AND NOT iu_core.fn_iu_route_worker_cursor_ahead(c)
           AND pg_snapshot_xmin(coalesce(c.done_snapshot, '1:1:'::pg_snapshot)) >= iu_core.fn_iu_outbox_hot_txid(c.event_domain)
           AND NOT EXISTS (SELECT 1 FROM iu_core.fn_iu_route_worker_beat_due(p_worker_name, NULL))
           AND NOT EXISTS (SELECT 1 FROM iu_core.fn_iu_route_worker_idle_new(c.event_domain, c.done_snapshot))
      FROM public.iu_route_worker_cursor c
     WHERE c.worker_name = p_worker_name
$$;
