CREATE OR REPLACE FUNCTION iu_core.fn_iu_outbox_hot_txid(p_event_domain text)
RETURNS xid8
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_outbox_hot_txid(p_event_domain) -> xid8: the lower bound of event_outbox's oldest
    -- partition that is not closed yet (fn_iu_partition_record_closes), written into this
    -- body as a constant by fn_iu_outbox_hot_refresh whenever a partition closes ('0' until
    -- one has: no bound). Internal, owner only.
    --
    -- Why a constant in a function body: a statement planned once and kept (every statement
    -- of the route worker runs on a generic plan) holds every partition of event_outbox in
    -- its plan, and PostgreSQL (13 to 17) locks every relation of a kept plan each time it
    -- runs it, pruned or not: a caught-up poll of a history kept for years paid one lock and
    -- one release per partition (100 closed partitions made it ~60 % dearer). A bound the
    -- planner sees as a constant prunes partitions when the plan is MADE, so they are not in
    -- it at all. This function is inlined where it is called (STABLE SQL: never evaluated
    -- ahead by the planner, always inlined), which records the plan's dependency on it: when
    -- the refresh replaces it, PostgreSQL discards every plan made with the old constant.
    -- p_event_domain is not read; it only keeps the call non-constant, so the planner inlines
    -- rather than evaluates it.
    --
    -- How it is used: the idle path's outbox question (fn_iu_route_worker_idle_new, _late and
    -- _idle_rows) adds `txid >= fn_iu_outbox_hot_txid(...)`, a no-op for a position at or
    -- above the bound, and the run asks it only for such a position (the probe,
    -- fn_iu_route_worker_idle_probe, checks it in the statement that asks the new rows; the
    -- full pass answers the others and moves them up). So the bound decides how much a
    -- statement plans, never what it finds. The late commits are a second statement: a
    -- refresh committed between the two can make one poll of a lagging worker read idle; the
    -- next poll sees the new bound and takes the full pass (the idle path writes nothing, so
    -- nothing is skipped). A stale or foreign bound (a dump restored into another cluster)
    -- costs speed, not rows. Its upper companion is fn_iu_outbox_hot_ceiling (the same
    -- refresh keeps both): the new-rows question is planned over [bound, ceiling).
    -- ---------------------------------------------------------------------------------------
    SELECT '0'::pg_catalog.xid8
$$;
