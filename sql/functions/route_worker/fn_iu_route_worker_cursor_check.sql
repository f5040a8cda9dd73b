CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_cursor_check(p_cursor public.iu_route_worker_cursor)
RETURNS SETOF text
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_cursor_check: THE cursor sanity rule (run refuses, health reports).
    --   p_cursor  a iu_route_worker_cursor row
    -- Returns no row when the stored position belongs to this cluster, else one row: a
    -- sentence saying why not. Either the recorded system_identifier differs (dump/restore or
    -- pg_upgrade into another cluster), or a stored snapshot or keyset position lies at or
    -- beyond this cluster's next transaction id (no transaction of this cluster can have
    -- produced it).
    -- Internal: inlinable SQL (no SECURITY DEFINER, no SET), so a run plans it into its own
    -- sanity statement instead of paying a function call per run. Nobody but the owner may
    -- execute it; its callers (fn_iu_route_worker_run, and fn_iu_route_worker_cursor_problem
    -- for the status view) are SECURITY DEFINER entry points that pin search_path.
    -- ---------------------------------------------------------------------------------------
    SELECT CASE WHEN p_cursor.system_identifier IS NOT NULL AND p_cursor.system_identifier <> k.sysid
                THEN format('cursor of worker %s was recorded in another cluster (system_identifier %s, this cluster %s)',
                            quote_literal(p_cursor.worker_name), p_cursor.system_identifier, k.sysid)
                ELSE format('cursor of worker %s holds transaction ids ahead of this cluster (stored xmax %s, current %s)',
                            quote_literal(p_cursor.worker_name),
                            coalesce(pg_snapshot_xmax(p_cursor.done_snapshot), pg_snapshot_xmax(p_cursor.window_snapshot)),
                            k.xmax) END
      FROM (SELECT s.system_identifier AS sysid, pg_snapshot_xmax(pg_current_snapshot()) AS xmax
              FROM pg_control_system() s) k
     WHERE (p_cursor.system_identifier IS NOT NULL AND p_cursor.system_identifier <> k.sysid)
        OR iu_core.fn_iu_route_worker_cursor_ahead(p_cursor)
$$;
