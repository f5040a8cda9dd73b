CREATE OR REPLACE FUNCTION iu_core.fn_iu_search_path_create_threats()
RETURNS TABLE (threat text, object text, holder text, fix text)
LANGUAGE sql STABLE
AS $$
    -- The first half of the threat scan (fn_iu_search_path_threats adds what is planted
    -- already): who may CREATE in public, where the API lives and its callers look it up.
    -- An untrusted holder of CREATE (PUBLIC, a login role, a group an untrusted role may act
    -- as) could plant an overload at any moment. The schema's owner holds CREATE implicitly:
    -- a NULL ACL means the default one (owner only). Inlinable like fn_iu_untrusted_roles.
    SELECT 'create_on_schema'::text, 'schema public'::text,
           CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::pg_catalog.regrole::text END,
           CASE WHEN a.grantee = n.nspowner
                THEN pg_catalog.format('ALTER SCHEMA public OWNER TO %s;', iu_core.fn_iu_package_owner()::pg_catalog.regrole)
                ELSE pg_catalog.format('REVOKE CREATE ON SCHEMA public FROM %s;',
                                       CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::pg_catalog.regrole::text END) END
      FROM pg_catalog.pg_namespace n
     CROSS JOIN LATERAL pg_catalog.aclexplode(coalesce(n.nspacl, pg_catalog.acldefault('n', n.nspowner))) a
     WHERE n.nspname = 'public'
       AND a.privilege_type = 'CREATE'
       AND EXISTS (SELECT 1 FROM iu_core.fn_iu_untrusted_roles(ARRAY[a.grantee]))
$$;
