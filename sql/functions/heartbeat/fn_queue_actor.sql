CREATE OR REPLACE FUNCTION iu_core.fn_queue_actor(p_actor text DEFAULT NULL, p_caller text DEFAULT 'fn_queue_actor')
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- Who the caller says is acting, for every *_by audit column of the package
    -- (registered_by, last_beat_by, paused_by, reset_by, resolved_by): the explicit
    -- argument, else the session's app.actor setting, else the login (session_user, not
    -- current_user, which inside a SECURITY DEFINER function is the owner). Blank counts as
    -- absent. A claim, not an identity: the *_session_user audit columns record the login
    -- next to it. Bounded like a name (200 bytes) so an audit column cannot store data.
DECLARE
    v_actor text := coalesce(nullif(btrim(p_actor), ''), nullif(btrim(current_setting('app.actor', true)), ''),
                             session_user::text);
BEGIN
    IF octet_length(v_actor) > 200 THEN
        RAISE EXCEPTION '%: p_actor (or app.actor) is % bytes long, at most 200 allowed', p_caller, octet_length(v_actor)
            USING ERRCODE = '22023', HINT = 'Name the actor, e.g. ''ops:alice'' or ''agent:codex-7''.';
    END IF;
    RETURN v_actor;
END;
$$;
