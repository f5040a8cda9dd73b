CREATE OR REPLACE FUNCTION iu_core.fn_iu_adopt_detach_views(p_rels regclass[], p_package_views text DEFAULT 'detach')
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_adopt_detach_views(rels) -> views dropped: every view that reads one of p_rels,
    -- directly or through other views, is recorded in iu_core.iu_adoption (its definition
    -- with every name schema-qualified, its owner, grants, comment and options, its depth)
    -- and dropped, deepest first. A column type change or a rename of a table would otherwise
    -- be refused (a view uses the column) or leave the view reading the renamed table;
    -- fn_iu_adopt_restore_views recreates them afterwards, reading the same names, so a view
    -- defined on event_outbox sees the rows inserted after the adoption. The first
    -- p_package_views says what happens to a view with a package name (v_iu_route_worker_status,
    -- ...): 'replace' (adoption: the first generation's, recorded as replaced and not
    -- recreated: the package creates its own), 'keep' (left alone: the rollback setting aside
    -- the user's views on the package's), 'detach' (like any other view). Internal.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v record;
    n integer := 0;
BEGIN
    FOR v IN
        WITH RECURSIVE deps(view_oid, depth) AS (
            SELECT DISTINCT w.ev_class, 1
              FROM pg_depend d JOIN pg_rewrite w ON w.oid = d.objid
             WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass
               AND d.refobjid = ANY (p_rels) AND w.ev_class <> d.refobjid
            UNION
            SELECT w.ev_class, deps.depth + 1
              FROM deps JOIN pg_depend d ON d.refobjid = deps.view_oid AND d.refclassid = 'pg_class'::regclass
              JOIN pg_rewrite w ON w.oid = d.objid AND d.classid = 'pg_rewrite'::regclass
             WHERE w.ev_class <> deps.view_oid AND deps.depth < 50
        )
        SELECT c.oid, c.oid::regclass AS rel, c.relkind, d.depth, c.relowner::regrole AS owner,
               c.relacl, c.reloptions, obj_description(c.oid, 'pg_class') AS comment,
               c.relnamespace = 'public'::regnamespace
               AND c.relname IN ('v_iu_route_worker_status', 'v_iu_route_dead_letter_open',
                                 'v_iu_route_attempt_summary', 'v_queue_health') AS replaced
          FROM (SELECT deps.view_oid, max(deps.depth) AS depth FROM deps GROUP BY deps.view_oid) d
          JOIN pg_class c ON c.oid = d.view_oid
         WHERE c.relkind IN ('v', 'm')
         ORDER BY d.depth DESC, c.oid
    LOOP
        CONTINUE WHEN v.replaced AND p_package_views = 'keep';
        PERFORM iu_core.fn_iu_adopt_record(v.rel::text, CASE WHEN v.replaced AND p_package_views = 'replace' THEN 'replaced_view' ELSE 'view' END,
            format('CREATE %s %s%s AS %s', CASE v.relkind WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'VIEW' END, v.rel,
                   CASE WHEN v.reloptions IS NOT NULL THEN ' WITH (' || array_to_string(v.reloptions, ', ') || ')' ELSE '' END,
                   rtrim(pg_get_viewdef(v.oid, true), E'; \n')),
            jsonb_build_object('depth', v.depth, 'owner', v.owner::text, 'comment', v.comment,
                               'grants', coalesce((SELECT jsonb_agg(jsonb_build_object(
                                             'grantee', CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END,
                                             'privilege', a.privilege_type, 'grantable', a.is_grantable))
                                         FROM aclexplode(v.relacl) a WHERE a.grantee <> v.owner::oid), '[]'::jsonb)));
        EXECUTE format('DROP %s %s', CASE v.relkind WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'VIEW' END, v.rel);
        n := n + 1;
    END LOOP;
    RETURN n;
END;
$$;
