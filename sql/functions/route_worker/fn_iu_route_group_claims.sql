CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_group_claims(
    p_id           uuid,
    p_event_stream text,
    p_bucket_lo    integer,
    p_bucket_hi    integer
)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_group_claims(p_id, p_event_stream, p_bucket_lo, p_bucket_hi): what the claim
    -- of a member whose buckets are [p_bucket_lo, p_bucket_hi) does with an event:
    --   true   its own: its stream's bucket (fn_iu_route_group_bucket, THE bucket rule) lies
    --          in the range; the member routes it
    --   false  another member's, and a waypoint (about 1 in 64, by a hash of its id): read
    --          past, it moves the member's keyset as its own events do
    --   NULL   another member's: skipped inside the claim's index scans, never returned
    -- Why waypoints: a window that holds none of a member's events (a domain of few streams,
    -- a long backlog) would otherwise be read whole by one page statement, however long;
    -- with them a page reads about 64 x its limit rows at most, and a run stays bounded as a
    -- worker's is, at about 1.5 % of the others' events entering the page. Any deterministic
    -- choice is correct (a waypoint is only read past); ids are time-ordered uuids whose low
    -- bits are random (fn_iu_event_new_id), so the hash picks evenly.
    -- The range test is one comparison: bucket - lo, taken modulo twice the number of
    -- buckets, is below hi - lo exactly when lo <= bucket < hi (a bucket below lo wraps to
    -- at least the number of buckets, which hi - lo never exceeds: the member table keeps
    -- 0 <= lo <= hi <= 4,096). The scan evaluates it for every event it skips, and the pair
    -- lo <= bucket < hi would hash the stream twice (about 1 % of a member's run).
    -- The claim keeps a row when this IS NOT NULL, which the planner prices at 99.5 % of the
    -- rows, so a member's page is planned as a worker's (its hash join to the routes). A
    -- plain boolean filter is priced at a third or less: the page's estimate dropped below
    -- the point where the routes were joined by one index probe per event (about 15 k
    -- instructions each, +28 % on a member's run).
    -- Inlinable SQL: planned into the scan's filter, no call per row.
    -- ---------------------------------------------------------------------------------------
    SELECT CASE WHEN ((iu_core.fn_iu_route_group_bucket(p_event_stream) - p_bucket_lo)
                      & (2 * iu_core.fn_iu_route_group_buckets() - 1)) < p_bucket_hi - p_bucket_lo THEN true
                WHEN (pg_catalog.uuid_hash(p_id) & 63) = 0 THEN false
           END
$$;
