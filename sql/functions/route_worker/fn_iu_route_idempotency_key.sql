CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_idempotency_key(p_worker_name text, p_route_key text, p_event_id uuid)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_idempotency_key: iu_wrk:{worker}:{route_key}:{event_id}, with 'none' for the
    -- route key when no route matched. Unambiguous because worker names carry no ':' (register
    -- refuses them), route keys may not be 'none', and the event id is fixed-length and last.
    -- Inlinable SQL, like the decision.
    -- ---------------------------------------------------------------------------------------
    SELECT 'iu_wrk:' || p_worker_name || ':' || coalesce(p_route_key, 'none') || ':' || p_event_id::text
$$;
