CREATE OR REPLACE FUNCTION iu_core.fn_queue_heartbeat_refuse_foreign(p_caller text, p_executor_id text, p_owner_role text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION '%: executor % is bound to role %; login % is not a member of it', p_caller,
        quote_literal(p_executor_id), quote_ident(p_owner_role), quote_ident(session_user)
        USING ERRCODE = '42501',
              HINT = format('Beat it from a login of that role, or an operator grants it: GRANT %I TO %I;',
                            p_owner_role, session_user);
END;
$$;
