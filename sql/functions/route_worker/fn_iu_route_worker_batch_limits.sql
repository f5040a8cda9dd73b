CREATE OR REPLACE FUNCTION public.fn_iu_route_worker_batch_limits()
RETURNS jsonb
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    -- fn_iu_route_worker_batch_limits() -> {"min_batch": 1, "max_batch": 10000,
    -- "default_batch": 100}: the batch a fn_iu_route_worker_run call accepts, read from where
    -- each rule is written: the bound from iu_core.fn_iu_route_worker_max_batch(), the default
    -- from the run's own signature (p_batch_limit DEFAULT ...). The runner asks it before its
    -- first run, so a bad --batch is a usage error and no other program restates the bound.
    -- Touches no table.
    SELECT pg_catalog.jsonb_build_object(
               'min_batch', 1,
               'max_batch', iu_core.fn_iu_route_worker_max_batch(),
               'default_batch', pg_catalog.pg_get_function_arg_default(
                                    'public.fn_iu_route_worker_run(text, integer)'::pg_catalog.regprocedure, 2)::integer)
$$;
