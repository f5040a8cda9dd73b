CREATE OR REPLACE FUNCTION iu_core.fn_iu_adopt_acl(p_acl aclitem[], p_owner oid)
RETURNS jsonb
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- fn_iu_adopt_acl(acl, owner) -> {"default": bool, "grants": [{grantee, privilege,
    -- grantable}]}: a legacy function's or view's privileges, as the ledger keeps them so the
    -- rollback can give them back exactly (fn_iu_adopt_restore_acl). "default" is a NULL acl:
    -- the object never had a GRANT or REVOKE, so PUBLIC may execute a function. The owner's
    -- own privileges are left out (a re-created object gives them back); the order is the
    -- acl's, so the privileges come back in it. Grantees are kept by
    -- name (unquoted): a role dropped since is skipped at the rollback. Internal.
    SELECT jsonb_build_object('default', p_acl IS NULL, 'grants',
             coalesce((SELECT jsonb_agg(jsonb_build_object(
                                 'grantee', CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_get_userbyid(a.grantee)::text END,
                                 'privilege', a.privilege_type, 'grantable', a.is_grantable)
                               ORDER BY a.n)
                         FROM aclexplode(p_acl) WITH ORDINALITY a(grantor, grantee, privilege_type, is_grantable, n)
                        WHERE a.grantee <> p_owner), '[]'::jsonb))
$$;
