CREATE OR REPLACE FUNCTION iu_core.fn_iu_adopt_record(p_object text, p_kind text, p_definition text, p_detail jsonb DEFAULT '{}')
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- fn_iu_adopt_record(object, kind, definition, detail): one line of the adoption ledger
    -- (iu_core.iu_adoption): a legacy object adoption replaced, dropped or altered, with the
    -- SQL that recreates it, so the rollback can give the legacy shape back. A legacy
    -- function (kind 'function') or view (kind 'replaced_view') is recorded with its
    -- privileges as they are now (detail.acl, fn_iu_adopt_acl), so the rollback gives them
    -- back exactly. Internal.
DECLARE
    v_detail jsonb := coalesce(p_detail, '{}'::jsonb);
BEGIN
    IF p_kind = 'function' THEN
        v_detail := v_detail || jsonb_build_object('acl',
            (SELECT iu_core.fn_iu_adopt_acl(p.proacl, p.proowner) FROM pg_proc p WHERE p.oid = p_object::regprocedure));
    ELSIF p_kind = 'replaced_view' THEN
        v_detail := v_detail || jsonb_build_object('acl',
            (SELECT iu_core.fn_iu_adopt_acl(c.relacl, c.relowner) FROM pg_class c WHERE c.oid = p_object::regclass));
    END IF;
    INSERT INTO iu_core.iu_adoption (object, kind, definition, detail)
    VALUES (p_object, p_kind, p_definition, v_detail);
END;
$$;
