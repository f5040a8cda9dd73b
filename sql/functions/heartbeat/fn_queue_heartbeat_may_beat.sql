CREATE OR REPLACE FUNCTION iu_core.fn_queue_heartbeat_may_beat(p_owner_role text)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- The binding rule: an unbound executor (NULL) may be beaten by any caller of the beat
    -- functions; a bound one only by a session whose login is a member of the owning role
    -- (directly or through other roles). session_user, not current_user: inside these
    -- SECURITY DEFINER functions current_user is the package owner, and SET ROLE must not
    -- lend one login another's executors. A dropped owning role binds to nobody.
    SELECT p_owner_role IS NULL
        OR (EXISTS (SELECT 1 FROM pg_catalog.pg_roles r WHERE r.rolname = p_owner_role)
            AND pg_catalog.pg_has_role(session_user, p_owner_role, 'MEMBER'))
$$;
