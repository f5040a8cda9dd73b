CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_lock_class()
RETURNS integer
LANGUAGE sql IMMUTABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_lock_class: the advisory-lock class of this package's route workers
    -- ('iu' + 1); the second key is the worker's lock_id, so no two workers share a lock.
    -- fn_iu_route_worker_try_lock(p_lock_id): take that lock without waiting (true) or learn
    -- that another transaction holds it (false). Both inlinable SQL, so the idle path of a run
    -- takes the lock inside an expression, without a call.
    -- ---------------------------------------------------------------------------------------
    SELECT 26997
$$;
