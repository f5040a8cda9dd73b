CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_backlog_cap()
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- Where a look at a worker stops counting its backlog (fn_iu_route_worker_pending):
    -- 10,000, so the look costs the same on a 10-million-row log. The figure is exact up to
    -- it and reads 10,000 (backlog_capped) beyond. Written once: iu-runner exports it as is
    -- (metrics.BacklogCap, held equal by a test), and every alert rule over the backlog fires
    -- below it, or it could never fire (deploy/check).
    -- ---------------------------------------------------------------------------------------
    SELECT 10000
$$;
