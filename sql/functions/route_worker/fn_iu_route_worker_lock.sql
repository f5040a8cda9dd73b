CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_lock(p_caller text, p_worker_name text, p_wait boolean)
RETURNS boolean
LANGUAGE plpgsql
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_lock: one run (or reset) per worker at a time.
    --   p_caller       the public function, for the error message
    --   p_worker_name  the worker (P0002 when not registered)
    --   p_wait         false: try once and return false when another transaction holds it
    --                  (a run reports busy at once); true: wait for it (a reset)
    -- Takes a transaction-scoped advisory lock keyed by the cursor's lock_id, so it is held
    -- until the caller's transaction ends, exactly like a row lock, but writes nothing: an
    -- idle run stays read-only (no transaction id, no WAL, no commit flush). Read the cursor
    -- row only after this returns true: the statement's fresh snapshot then sees everything
    -- the previous holder committed.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_id integer;
BEGIN
    SELECT cur.lock_id INTO v_id FROM public.iu_route_worker_cursor cur WHERE cur.worker_name = p_worker_name;
    IF v_id IS NULL THEN
        PERFORM iu_core.fn_iu_route_worker_not_registered(p_caller, p_worker_name);
    END IF;
    IF p_wait THEN
        PERFORM pg_advisory_xact_lock(iu_core.fn_iu_route_worker_lock_class(), v_id);
        RETURN true;
    END IF;
    RETURN iu_core.fn_iu_route_worker_try_lock(v_id);
END;
$$;
