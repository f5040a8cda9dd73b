CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_group_buckets()
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_group_buckets(): how many hash buckets a group's members share (4,096, a
    -- power of two: fn_iu_route_group_bucket masks with it minus one). Each member routes a
    -- contiguous range [bucket_lo, bucket_hi) of them; a rebalance gives every member an
    -- equal share, in the order of their names. Written once; the member table's checks hold
    -- the same bound.
    -- ---------------------------------------------------------------------------------------
    SELECT 4096
$$;
