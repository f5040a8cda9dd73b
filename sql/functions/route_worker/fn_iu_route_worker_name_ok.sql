CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_name_ok(p_worker_name text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_name_ok(p_worker_name) -> boolean: THE worker-name rule as a test:
    -- true exactly when fn_iu_route_worker_require_name accepts the name (not blank, at most
    -- 200 bytes as fn_iu_require_name's default bound, no ':'; a test holds the two equal).
    -- Inlinable SQL, so a caller on a hot path tests a name in an expression, without a
    -- statement, and calls fn_iu_route_worker_require_name only to raise the error that
    -- names the fault. Internal, owner only.
    -- ---------------------------------------------------------------------------------------
    SELECT NOT iu_core.fn_iu_is_blank(p_worker_name)
           AND octet_length(p_worker_name) <= 200
           AND position(':' IN p_worker_name) = 0
$$;
