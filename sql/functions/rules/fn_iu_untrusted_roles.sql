CREATE OR REPLACE FUNCTION iu_core.fn_iu_untrusted_roles(p_roles oid[])
RETURNS TABLE (role oid)
LANGUAGE sql STABLE
AS $$
    -- The trust rule, in one place: which of p_roles are untrusted. 0 is PUBLIC (everyone):
    -- never trusted. pg_database_owner (PostgreSQL 14+; to_regrole gives NULL on 13) is read
    -- as the database's owner. Trusted means: the role can act as the package owner.
    --   PostgreSQL 16+  pg_has_role(role, owner, 'USAGE') AND pg_has_role(role, owner, 'SET'):
    --                   it holds the owner's privileges (INHERIT along the whole chain) and
    --                   may become it (SET ROLE). 16 made both options of a grant: a member
    --                   granted the owner WITH INHERIT FALSE, SET FALSE is a member that can
    --                   do neither, and is untrusted (so is one that can do only one of them:
    --                   counting it untrusted only ever reports more).
    --   13 to 15        pg_has_role(role, owner, 'MEMBER'): every member may SET ROLE to it.
    -- Both are true for the owner itself and every superuser, and NULL (untrusted) for a role
    -- that no longer exists. Membership and superuser status come from the role caches. The
    -- owner is the owner of schema iu_core (fn_iu_package_owner's rule, inlined here).
    -- Written to be inlined (no SET, everything pg_catalog-qualified, one SELECT); the
    -- version test is a CASE, so 'SET' (an error before 16) is never evaluated on 13-15.
    SELECT g.role
      FROM pg_catalog.unnest(p_roles) AS g(role)
     CROSS JOIN LATERAL (
           SELECT CASE WHEN g.role = pg_catalog.to_regrole('pg_database_owner')
                       THEN (SELECT d.datdba FROM pg_catalog.pg_database d
                              WHERE d.datname = pg_catalog.current_database())
                       ELSE g.role END AS member,
                  (SELECT n.nspowner FROM pg_catalog.pg_namespace n WHERE n.nspname = 'iu_core') AS owner) r
     WHERE g.role = 0
        OR NOT coalesce(
               CASE WHEN pg_catalog.current_setting('server_version_num')::pg_catalog.int4 >= 160000
                    THEN pg_catalog.pg_has_role(r.member, r.owner, 'USAGE')
                         AND pg_catalog.pg_has_role(r.member, r.owner, 'SET')
                    ELSE pg_catalog.pg_has_role(r.member, r.owner, 'MEMBER') END, false)
$$;
