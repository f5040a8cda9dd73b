CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_group_bucket(p_event_stream text)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_group_bucket(p_event_stream): THE bucket of an event in a group, by a stable
    -- hash of its stream, so every event of one stream goes to the member that owns that
    -- bucket, and one stream's events stay in order. hashtextextended is the hash PostgreSQL
    -- partitions tables by (hash partitioning needs it stable across versions and
    -- pg_upgrade); seed 0. A NULL stream (the column forbids one) would be bucket 0.
    -- Inlinable SQL: planned into the member's page statement, no call per event.
    -- ---------------------------------------------------------------------------------------
    SELECT coalesce((hashtextextended(p_event_stream, 0) & (iu_core.fn_iu_route_group_buckets() - 1))::integer, 0)
$$;
