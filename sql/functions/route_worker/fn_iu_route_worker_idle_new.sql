CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_idle_new(p_event_domain text, p_done pg_snapshot)
RETURNS SETOF text
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_idle_new(p_event_domain, p_done): half (b) of the idle path's outbox
    -- question (fn_iu_route_worker_idle_rows), and the whole of it when p_done lists no
    -- transaction in progress (its xmin equals its xmax: half (a), the late commits, then has
    -- nothing to find, and not setting up its scan saves an idle run about 7 %). A row 'new'
    -- for each row of the domain at or above p_done's xmax that the statement can see: every
    -- row a window opened now would claim in its second range. Asked under EXISTS, which
    -- stops at the first (no LIMIT, so the planner flattens it into one scan node per
    -- partition). A NULL p_done (never run) asks from the first transaction id.
    -- Every bound is known when the statement is planned or starts, so the partitions outside
    -- them are not scanned:
    --   * the outbox's hot bound (fn_iu_outbox_hot_txid: the lower bound of its oldest
    --     partition not closed yet) is a constant in the plan, so the closed history
    --     partitions are not in it at all and a kept-forever history does not make a
    --     caught-up poll dearer. It is a no-op for a position at or above it, and the caller
    --     asks only for such a position (fn_iu_route_worker_idle_probe checks it; the full
    --     pass answers the others and moves them up);
    --   * p_done's xmax prunes the open partitions below it;
    --   * the statement's snapshot xmax prunes those ahead of it and the default partition
    --     whenever the partitions cover the range (maintenance is not behind). No committed
    --     row the statement can see lies at or above its snapshot's xmax: only rows restored
    --     from another cluster can, and the idle path leaves those to the full pass, which
    --     refuses them (IU002) at the first event or the first due beat, as it does a cursor
    --     from another cluster (they are invisible to every window: nothing is routed
    --     meanwhile, and health reports them at once).
    -- Internal: inlinable SQL, owner only.
    -- ---------------------------------------------------------------------------------------
    SELECT 'new'
      FROM public.event_outbox o
     WHERE o.event_domain = p_event_domain
       AND o.txid >= iu_core.fn_iu_outbox_hot_txid(p_event_domain)
       AND o.txid >= pg_snapshot_xmax(coalesce(p_done, '1:1:'::pg_snapshot))
       AND o.txid < pg_snapshot_xmax(pg_current_snapshot())
$$;
