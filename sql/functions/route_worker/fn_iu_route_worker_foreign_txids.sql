CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_foreign_txids(p_event_domain text)
RETURNS boolean
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_foreign_txids: fn_iu_route_worker_foreign_rows as a yes/no for
    -- v_iu_route_worker_status, whose reader (workflow_admin) executes it.
    -- ---------------------------------------------------------------------------------------
    SELECT EXISTS (SELECT 1 FROM iu_core.fn_iu_route_worker_foreign_rows(p_event_domain))
$$;
