CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_not_registered(p_caller text, p_worker_name text)
RETURNS void
LANGUAGE plpgsql
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_not_registered: the one "unknown worker" error (P0002 + the fix).
    -- ---------------------------------------------------------------------------------------
BEGIN
    RAISE EXCEPTION '%: worker % is not registered', p_caller, quote_literal(p_worker_name)
        USING ERRCODE = 'P0002',
              HINT = format('Register it first: SELECT fn_iu_route_worker_register(%L);', p_worker_name);
END;
$$;
