CREATE OR REPLACE FUNCTION iu_core.fn_iu_adopt_restore_acl(p_object text, p_kind text, p_acl jsonb)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_adopt_restore_acl(object, kind, acl): a legacy function (kind 'FUNCTION', object
    -- a regprocedure text) or view (kind 'TABLE') given back exactly the privileges the
    -- ledger recorded (fn_iu_adopt_acl), whatever it holds now: every grant but the owner's
    -- revoked (PUBLIC's default EXECUTE too), then the recorded ones granted, and PUBLIC's
    -- default EXECUTE back when the legacy object had never been granted or revoked. So a
    -- legacy REVOKE ... FROM PUBLIC survives the rollback, and a grant adoption added (the
    -- producers' EXECUTE on fn_iu_emit_event) does not. Internal.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_acl   aclitem[];
    v_owner oid;
    g       jsonb;
    r       record;
BEGIN
    IF p_kind = 'FUNCTION' THEN
        SELECT p.proacl, p.proowner INTO v_acl, v_owner FROM pg_proc p WHERE p.oid = p_object::regprocedure;
    ELSE
        SELECT c.relacl, c.relowner INTO v_acl, v_owner FROM pg_class c WHERE c.oid = p_object::regclass;
    END IF;
    EXECUTE format('REVOKE ALL ON %s %s FROM PUBLIC', p_kind, p_object);
    FOR r IN SELECT DISTINCT a.grantee FROM aclexplode(v_acl) a WHERE a.grantee NOT IN (0, v_owner) LOOP
        EXECUTE format('REVOKE ALL ON %s %s FROM %s', p_kind, p_object, r.grantee::regrole);
    END LOOP;
    IF coalesce((p_acl->>'default')::boolean, false) AND p_kind = 'FUNCTION' THEN
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO PUBLIC', p_object);
    END IF;
    FOR g IN SELECT * FROM jsonb_array_elements(coalesce(p_acl->'grants', '[]')) LOOP
        CONTINUE WHEN g->>'grantee' <> 'PUBLIC' AND to_regrole(quote_ident(g->>'grantee')) IS NULL;
        EXECUTE format('GRANT %s ON %s %s TO %s%s', coalesce(g->>'privilege', 'EXECUTE'), p_kind, p_object,
                       CASE WHEN g->>'grantee' = 'PUBLIC' THEN 'PUBLIC' ELSE quote_ident(g->>'grantee') END,
                       CASE WHEN (g->>'grantable')::boolean THEN ' WITH GRANT OPTION' ELSE '' END);
    END LOOP;
END;
$$;
