CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_max_batch()
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- The most events one fn_iu_route_worker_run call routes, in one place (a batch is at
    -- least one event). The run refuses a p_batch_limit outside 1..this with 22023, and the
    -- runner reads the same bound (fn_iu_route_worker_batch_limits) to refuse a bad --batch
    -- before its first run. Inlined into the run's check, where it folds to a constant.
    SELECT 10000
$$;
