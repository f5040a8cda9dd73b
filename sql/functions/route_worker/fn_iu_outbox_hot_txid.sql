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
    -- How it is used: a question about the rows at or above some position asks it with
    -- `txid >= fn_iu_outbox_hot_txid(...)` added, in the same statement that checks the
    -- position is at or above the bound (both read the same constant: one plan), and answers
    -- "cannot tell" otherwise. So the bound only ever decides how much a statement plans,
    -- never what it finds; a stale or foreign bound (a dump restored into another cluster)
    -- costs speed, not rows.
    -- ---------------------------------------------------------------------------------------
    SELECT '0'::pg_catalog.xid8
$$;
