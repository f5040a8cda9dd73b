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
    -- Every bound is known when the statement is planned or runs, so the partitions outside
    -- them are not scanned:
    --   * the outbox's hot bound (fn_iu_outbox_hot_txid: the lower bound of its oldest
    --     partition not closed yet) is a constant in the plan, so the closed history
    --     partitions are not in it at all and a kept-forever history does not make a
    --     caught-up poll dearer. It is a no-op for a position at or above it, and the caller
    --     asks only for such a position (fn_iu_route_worker_idle_probe checks it; the full
    --     pass answers the others and moves them up);
    --   * the hot ceiling (fn_iu_outbox_hot_ceiling: the upper bound of the partition txids
    --     were assigned in when maintenance last ran) is a constant too, so the partitions
    --     ahead and the default one are not in the plan either: between two crossings the
    --     plan is one index scan of one partition, no Append and no pruning to set up;
    --   * p_done's xmax prunes the open partitions below it as the statement runs.
    -- No bound by the statement's snapshot xmax (a runtime index key that cost each poll
    -- about 1.5 %): no committed row of this cluster lies at or above it, so below the ceiling
    -- it can only drop rows restored from another cluster with txids beyond this one's, and
    -- those are better found than dropped (the run goes to the full pass, which refuses them,
    -- IU002). The rows at or above the ceiling are fn_iu_route_worker_idle_above's: the probe
    -- says when the statement's snapshot passed it (txids crossed into the next partition
    -- since maintenance last moved it, or maintenance has not set it yet), and the run then
    -- asks them too.
    -- Internal: inlinable SQL, owner only.
    -- ---------------------------------------------------------------------------------------
    SELECT 'new'
      FROM public.event_outbox o
     WHERE o.event_domain = p_event_domain
       AND o.txid >= iu_core.fn_iu_outbox_hot_txid(p_event_domain)
       AND o.txid < iu_core.fn_iu_outbox_hot_ceiling(p_event_domain)
       AND o.txid >= pg_snapshot_xmax(coalesce(p_done, '1:1:'::pg_snapshot))
$$;
