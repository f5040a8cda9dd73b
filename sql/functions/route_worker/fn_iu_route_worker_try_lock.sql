CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_try_lock(p_lock_id integer)
RETURNS boolean
LANGUAGE sql VOLATILE
AS $$
    SELECT pg_try_advisory_xact_lock(iu_core.fn_iu_route_worker_lock_class(), p_lock_id)
$$;
