CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_require_name(p_caller text, p_worker_name text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_require_name: the worker-name rule of every function that takes one.
    -- A worker name is a bounded, non-blank name (fn_iu_require_name) without ':' (it is part
    -- of the idempotency key). fn_iu_route_worker_name_ok is the same rule as a test, for
    -- callers that test first and call this only to raise; a name it accepts returns here at
    -- once.
    -- ---------------------------------------------------------------------------------------
BEGIN
    IF iu_core.fn_iu_route_worker_name_ok(p_worker_name) THEN
        RETURN;
    END IF;
    PERFORM iu_core.fn_iu_require_name(p_caller, 'p_worker_name', p_worker_name);
    IF position(':' IN p_worker_name) > 0 THEN
        RAISE EXCEPTION '%: p_worker_name % may not contain '':''', p_caller, quote_literal(p_worker_name)
            USING ERRCODE = '22023',
                  HINT = 'The worker name is part of idempotency keys (iu_wrk:{worker}:{route_key}:{event_id}).';
    END IF;
END;
$$;
