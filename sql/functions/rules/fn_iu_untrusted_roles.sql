CREATE OR REPLACE FUNCTION iu_core.fn_iu_untrusted_roles(p_roles oid[])
RETURNS TABLE (role oid)
LANGUAGE sql STABLE
AS $$
    -- The trust rule, in one place: which of p_roles are untrusted. 0 is PUBLIC (everyone):
    -- never trusted. pg_database_owner (PostgreSQL 14+; to_regrole gives NULL on 13) is read
    -- as the database's owner. Trusted means pg_has_role(role, owner, 'MEMBER'), which is
    -- true for the owner itself, its members and every superuser (a superuser is a member
    -- of every role), and false for a role that no longer exists. Membership and superuser
    -- status come from the role caches. The owner is the owner of schema iu_core
    -- (fn_iu_package_owner's rule, inlined here). Written to be inlined (no SET, everything
    -- pg_catalog-qualified, one SELECT).
    SELECT g.role
      FROM pg_catalog.unnest(p_roles) AS g(role)
     WHERE g.role = 0
        OR NOT coalesce(pg_catalog.pg_has_role(
               CASE WHEN g.role = pg_catalog.to_regrole('pg_database_owner')
                    THEN (SELECT d.datdba FROM pg_catalog.pg_database d
                           WHERE d.datname = pg_catalog.current_database())
                    ELSE g.role END,
               (SELECT n.nspowner FROM pg_catalog.pg_namespace n WHERE n.nspname = 'iu_core'),
               'MEMBER'), false)
$$;
