CREATE OR REPLACE FUNCTION iu_core.fn_iu_package_owner()
RETURNS oid
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    -- The package owner: the role that owns the schema iu_core (the role that ran the
    -- migrations). Read from pg_namespace by name, which needs no privilege: the row rules
    -- that ask it run in a producer's rights, and a producer has no USAGE on iu_core.
    --
    -- Trusted roles (fn_iu_untrusted_roles): superusers, the package owner, and every role
    -- that is a member of the owner (it can already act as the owner). Everyone else, and
    -- PUBLIC, is untrusted.
    SELECT n.nspowner FROM pg_catalog.pg_namespace n WHERE n.nspname = 'iu_core'
$$;
