CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_idempotency_prefix(p_worker_name text, p_route_key text)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_idempotency_prefix: iu_wrk:{worker}:{route_key}: (with 'none' for the route
    -- key when no route matched), the part of an idempotency key that names no event
    -- (fn_iu_route_idempotency_key appends the event id to it). A page builds it once per
    -- route, so each of its events joins one string to its id (fn_iu_route_worker_page).
    -- Inlinable SQL.
    -- ---------------------------------------------------------------------------------------
    SELECT 'iu_wrk:' || p_worker_name || ':' || coalesce(p_route_key, 'none') || ':'
$$;
