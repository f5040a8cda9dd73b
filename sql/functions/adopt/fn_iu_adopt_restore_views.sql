CREATE OR REPLACE FUNCTION iu_core.fn_iu_adopt_restore_views()
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_adopt_restore_views() -> views recreated: every view fn_iu_adopt_detach_views
    -- dropped and that is not recreated yet, shallowest first, as it was (definition, owner,
    -- grants, comment). A view that reads one the package has not created yet (a dashboard
    -- on v_iu_route_worker_status, before the route worker's functions exist) stays pending
    -- for the next call: the migrations call this after each step that may make one possible.
    -- Internal.
    -- ---------------------------------------------------------------------------------------
DECLARE
    r record;
    g jsonb;
    n integer := 0;
BEGIN
    FOR r IN SELECT a.id, a.object, a.definition, a.detail FROM iu_core.iu_adoption a
              WHERE a.kind = 'view' AND a.restored_at IS NULL
              ORDER BY (a.detail->>'depth')::integer, a.id LOOP
        IF to_regclass(r.object) IS NOT NULL THEN
            -- recreated already (a later record of the same view)
            UPDATE iu_core.iu_adoption SET restored_at = now() WHERE id = r.id;
            CONTINUE;
        END IF;
        BEGIN
            EXECUTE r.definition;
        EXCEPTION WHEN undefined_table OR undefined_column OR undefined_function THEN
            CONTINUE; -- what it reads does not exist yet
        END;
        IF r.detail->>'owner' IS NOT NULL AND r.detail->>'owner' <> current_user::text THEN
            EXECUTE format('ALTER VIEW %s OWNER TO %I', r.object, r.detail->>'owner');
        END IF;
        FOR g IN SELECT * FROM jsonb_array_elements(r.detail->'grants') LOOP
            EXECUTE format('GRANT %s ON %s TO %s%s', g->>'privilege', r.object,
                           CASE WHEN g->>'grantee' = 'PUBLIC' THEN 'PUBLIC' ELSE quote_ident(g->>'grantee') END,
                           CASE WHEN (g->>'grantable')::boolean THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
        IF r.detail->>'comment' IS NOT NULL THEN
            EXECUTE format('COMMENT ON VIEW %s IS %L', r.object, r.detail->>'comment');
        END IF;
        UPDATE iu_core.iu_adoption SET restored_at = now() WHERE id = r.id;
        n := n + 1;
    END LOOP;
    RETURN n;
END;
$$;
