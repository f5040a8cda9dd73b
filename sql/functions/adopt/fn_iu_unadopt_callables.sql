CREATE OR REPLACE FUNCTION iu_core.fn_iu_unadopt_callables()
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- fn_iu_unadopt_callables() -> objects recreated: the rollback of 008, once the
    -- package's functions and views are gone (009 down): the first generation's functions
    -- and views that adoption replaced come back as they were, with their grants (PUBLIC's
    -- included), and the user's views on them after them. Internal.
DECLARE
    r   record;
    g   jsonb;
    v_n integer := 0;
BEGIN
    -- A legacy body names the legacy tables unqualified: it is checked when called (in
    -- the legacy function's own search_path), not here, where nothing but pg_catalog is searched.
    PERFORM set_config('check_function_bodies', 'off', true);
    FOR r IN SELECT a.id, a.object, a.definition, a.detail FROM iu_core.iu_adoption a
              WHERE a.kind = 'function' ORDER BY a.id LOOP
        IF to_regprocedure(r.object) IS NULL THEN
            EXECUTE r.definition;
            FOR g IN SELECT * FROM jsonb_array_elements(coalesce(r.detail->'grants', '[]')) LOOP
                CONTINUE WHEN g->>'grantee' <> 'PUBLIC' AND to_regrole(g->>'grantee') IS NULL;
                EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %s', r.object,
                               CASE WHEN g->>'grantee' = 'PUBLIC' THEN 'PUBLIC' ELSE quote_ident(g->>'grantee') END);
            END LOOP;
            v_n := v_n + 1;
        END IF;
        DELETE FROM iu_core.iu_adoption WHERE id = r.id;
    END LOOP;
    FOR r IN SELECT a.id, a.object, a.definition, a.detail FROM iu_core.iu_adoption a
              WHERE a.kind = 'replaced_view' ORDER BY a.id LOOP
        IF to_regclass(r.object) IS NULL THEN
            EXECUTE r.definition;
            FOR g IN SELECT * FROM jsonb_array_elements(coalesce(r.detail->'grants', '[]')) LOOP
                CONTINUE WHEN g->>'grantee' <> 'PUBLIC' AND to_regrole(g->>'grantee') IS NULL;
                EXECUTE format('GRANT %s ON %s TO %s', g->>'privilege', r.object,
                               CASE WHEN g->>'grantee' = 'PUBLIC' THEN 'PUBLIC' ELSE quote_ident(g->>'grantee') END);
            END LOOP;
            v_n := v_n + 1;
        END IF;
        DELETE FROM iu_core.iu_adoption WHERE id = r.id;
    END LOOP;
    RETURN v_n + iu_core.fn_iu_adopt_restore_views();
END;
$$;
