CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_xip(p_snapshot pg_snapshot)
RETURNS SETOF xid8
LANGUAGE plpgsql IMMUTABLE
-- The planner's estimate of the set, not its size: see below.
ROWS 10000
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_xip(p_snapshot) -> setof xid8: the transactions p_snapshot lists in
    -- progress, pg_snapshot_xip(p_snapshot) and nothing else. Internal: the claim's
    -- late-commit branch reads its position's done snapshot through it.
    --
    -- Why a wrapper: the row estimate. A PL/pgSQL function is never inlined, so the planner
    -- takes its ROWS as given, and that makes the claim's estimated rows large whatever the
    -- domain's size. The page joins the claim's events to the domain's routes
    -- (fn_iu_route_worker_page), and PostgreSQL picks that join by the generic plan's estimate
    -- of the page's rows: a nested loop when it is a row or two, which re-reads every route of
    -- the domain for every event (~6.6 k instructions an event with seven routes, against a
    -- hash probe's fraction of that). Without the wrapper the estimate is small and arbitrary:
    -- the claim's range is a pair of bounds, estimated at 0.5 % of the domain, and each LIMIT
    -- of an unknown count at a tenth of what it reads, so the join method would follow the
    -- domain's size. With it the join is a hash join from a few hundred rows of a domain up.
    -- The set itself is as small as it is (usually empty): it is read once per page.
    -- ---------------------------------------------------------------------------------------
BEGIN
    RETURN QUERY SELECT x FROM pg_catalog.pg_snapshot_xip(p_snapshot) AS x;
END;
$$;

COMMENT ON FUNCTION iu_core.fn_iu_route_worker_xip(pg_snapshot) IS
    'Internal (route worker): pg_snapshot_xip(p_snapshot) with a large row estimate, so that the page''s route join is planned as a hash join whatever the domain''s size.';
