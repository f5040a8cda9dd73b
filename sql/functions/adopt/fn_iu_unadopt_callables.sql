CREATE OR REPLACE FUNCTION iu_core.fn_iu_unadopt_callables()
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- fn_iu_unadopt_callables() -> objects recreated: the rollback of 008, once the
    -- package's functions and views are gone (009 down): the first generation's functions
    -- and views that adoption replaced come back as they were, with exactly the privileges
    -- they had (fn_iu_adopt_restore_acl: a REVOKE from PUBLIC kept, a grant adoption added
    -- taken back), and the user's views on them after them. Internal.
DECLARE
    r   record;
    v_n    integer := 0;
    v_emit regprocedure;
BEGIN
    -- A legacy body names the legacy tables unqualified: it is checked when called (in
    -- the legacy function's own search_path), not here, where nothing but pg_catalog is searched.
    PERFORM set_config('check_function_bodies', 'off', true);
    FOR r IN SELECT a.id, a.object, a.definition, a.detail FROM iu_core.iu_adoption a
              WHERE a.kind = 'function' ORDER BY a.id LOOP
        IF to_regprocedure(r.object) IS NULL THEN
            EXECUTE r.definition;
            PERFORM iu_core.fn_iu_adopt_restore_acl(r.object, 'FUNCTION', r.detail->'acl');
            v_n := v_n + 1;
        END IF;
        DELETE FROM iu_core.iu_adoption WHERE id = r.id;
    END LOOP;
    -- The producers adoption gave EXECUTE on the legacy emit (so they kept emitting through
    -- the replacement) lose it again: the legacy function's privileges are as they were.
    v_emit := to_regprocedure('public.fn_iu_emit_event(text, text, text, text, text, text, text, jsonb)');
    FOR r IN SELECT jsonb_array_elements_text(a.detail->'emit_added') AS role
               FROM iu_core.iu_adoption a WHERE a.kind = 'producer_grants' LOOP
        CONTINUE WHEN v_emit IS NULL OR to_regrole(quote_ident(r.role)) IS NULL;
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM %I', v_emit, r.role);
    END LOOP;
    FOR r IN SELECT a.id, a.object, a.definition, a.detail FROM iu_core.iu_adoption a
              WHERE a.kind = 'replaced_view' ORDER BY a.id LOOP
        IF to_regclass(r.object) IS NULL THEN
            EXECUTE r.definition;
            PERFORM iu_core.fn_iu_adopt_restore_acl(r.object, 'TABLE', r.detail->'acl');
            v_n := v_n + 1;
        END IF;
        DELETE FROM iu_core.iu_adoption WHERE id = r.id;
    END LOOP;
    RETURN v_n + iu_core.fn_iu_adopt_restore_views();
END;
$$;
