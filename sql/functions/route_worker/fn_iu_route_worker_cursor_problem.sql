CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_cursor_problem(p_cursor public.iu_route_worker_cursor)
RETURNS text
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_cursor_problem: fn_iu_route_worker_cursor_check as one value (NULL
    -- when the cursor is sane) for v_iu_route_worker_status, whose reader (workflow_admin)
    -- executes it. SECURITY DEFINER: pg_control_system() is not for every role.
    -- ---------------------------------------------------------------------------------------
    SELECT (SELECT k FROM iu_core.fn_iu_route_worker_cursor_check(p_cursor) k LIMIT 1)
$$;
