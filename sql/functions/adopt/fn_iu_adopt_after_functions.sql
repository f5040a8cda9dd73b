CREATE OR REPLACE FUNCTION iu_core.fn_iu_adopt_after_functions()
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- fn_iu_adopt_after_functions() -> what it did: the last steps of an adoption, once the
    -- package's functions and views exist (migration 010, after 009): the roles that could
    -- execute a first-generation function of a package name (by a grant, not through PUBLIC)
    -- may execute the package's; the producers (roles that may INSERT into event_outbox) may
    -- execute fn_iu_emit_event; and the views set aside for a package-named view they read
    -- are recreated. Idempotent. Internal.
DECLARE
    r      record;
    g      jsonb;
    v_sig  regprocedure;
    v_n    integer := 0;
    v_role text;
BEGIN
    FOR r IN SELECT a.object, a.detail FROM iu_core.iu_adoption a WHERE a.kind = 'function' LOOP
        v_sig := to_regprocedure(r.object);
        CONTINUE WHEN v_sig IS NULL;
        FOR g IN SELECT * FROM jsonb_array_elements(coalesce(r.detail->'acl'->'grants', '[]')) LOOP
            CONTINUE WHEN g->>'grantee' = 'PUBLIC' OR to_regrole(quote_ident(g->>'grantee')) IS NULL;
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %s%s', v_sig, to_regrole(quote_ident(g->>'grantee')),
                           CASE WHEN (g->>'grantable')::boolean THEN ' WITH GRANT OPTION' ELSE '' END);
            v_n := v_n + 1;
        END LOOP;
    END LOOP;
    FOR r IN SELECT a.detail FROM iu_core.iu_adoption a WHERE a.kind = 'producer_grants' LOOP
        FOR v_role IN SELECT jsonb_array_elements_text(r.detail->'roles') LOOP
            CONTINUE WHEN to_regrole(v_role) IS NULL;
            EXECUTE format('GRANT EXECUTE ON FUNCTION public.fn_iu_emit_event(text, text, text, text, text, text, text, jsonb) TO %s',
                           to_regrole(v_role));
            v_n := v_n + 1;
        END LOOP;
    END LOOP;
    RETURN jsonb_build_object('grants', v_n, 'views_restored', iu_core.fn_iu_adopt_restore_views());
END;
$$;
