CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_claim(
    p_event_domain text,
    p_pos          iu_core.iu_route_window,
    p_limit        integer,
    p_bucket_lo    integer DEFAULT NULL,
    p_bucket_hi    integer DEFAULT NULL
)
RETURNS TABLE (id uuid, txid xid8, event_type text, event_stream text, created_at timestamptz)
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- Internal: the claim. Inlinable SQL (no SECURITY DEFINER, no SET), so its body is planned
    -- inside the caller's statement and EXPLAIN shows the two index range scans. It needs no
    -- privileges of its own: nobody but the owner may execute it, and its only caller,
    -- fn_iu_route_worker_run, is SECURITY DEFINER with search_path pinned.
    -- ---------------------------------------------------------------------------------------
    --
    -- Each branch's keyset bound is the index's lower bound, so the btree starts AT the
    -- keyset position; the scalar bounds on txid beside it (for partition pruning) are
    -- weaker or equal, and btree starts the scan at the row comparison, not at a scalar key
    -- of the same column (measured by TestClaim_PageReadsFromThePositionToTheWindowsEnd, on
    -- PostgreSQL 13, 15 and 18: a scan that started at xmax(done) would read the window's
    -- claimed prefix again on every page). The position row itself is excluded by a plain
    -- filter.
    --
    -- A group member's claim (p_bucket_lo, p_bucket_hi: its buckets) is the same claim with
    -- one more filter in each branch's index scan, BEFORE its LIMIT
    -- (fn_iu_route_group_claims: its own events and the others' waypoints): the others'
    -- events cost the scan only, and the page is the member's next p_limit rows of the
    -- window. A worker's call leaves both NULL: the filter folds away when the statement is
    -- planned (a constant NULL IS NULL is true), so a worker's plan has no trace of it.
    SELECT u.id, u.txid, u.event_type, u.event_stream, u.created_at
      FROM (
            -- (a) transactions in progress when done was taken, completed by the window:
            --     one probe per such xid, on (event_domain, txid = x, id >= ...); the xids
            --     through fn_iu_route_worker_xip, whose large row estimate keeps the page's
            --     route join a hash join whatever the domain's size (see there). Every id
            --     done lists lies in [xmin(done), xmax(done)), and the branch says so in two
            --     scalar bounds of txid: they change no row, but they are known when the
            --     statement starts, so PostgreSQL prunes by them before it builds a scan, and a
            --     page sets up the probe on the partitions that range overlaps (usually one)
            --     instead of on every partition history keeps (the probe's own txid is known
            --     only row by row). Under the equality on txid they leave the generic plan's
            --     estimates as they were.
            (SELECT e.id, e.txid, e.event_type, e.event_stream, e.created_at
               FROM iu_core.fn_iu_route_worker_xip(coalesce((p_pos).done_snapshot, '1:1:'::pg_snapshot)) AS x(xip_txid)
              CROSS JOIN LATERAL (
                    SELECT o.id, o.txid, o.event_type, o.event_stream, o.created_at
                      FROM public.event_outbox o
                     WHERE o.event_domain = p_event_domain
                       AND o.txid = x.xip_txid
                       AND o.txid >= pg_snapshot_xmin(coalesce((p_pos).done_snapshot, '1:1:'::pg_snapshot))
                       AND o.txid < pg_snapshot_xmax(coalesce((p_pos).done_snapshot, '1:1:'::pg_snapshot))
                       AND o.id >= CASE WHEN x.xip_txid = (p_pos).after_txid THEN (p_pos).after_id
                                        ELSE '00000000-0000-0000-0000-000000000000'::uuid END
                       AND (x.xip_txid, o.id) IS DISTINCT FROM ((p_pos).after_txid, (p_pos).after_id)
                       AND (p_bucket_lo IS NULL OR iu_core.fn_iu_route_group_claims(o.id, o.event_stream, p_bucket_lo, p_bucket_hi) IS NOT NULL)
                     ORDER BY o.id
                     LIMIT p_limit) e
              WHERE pg_visible_in_snapshot(x.xip_txid, (p_pos).window_snapshot)
                AND ((p_pos).after_txid IS NULL OR x.xip_txid >= (p_pos).after_txid)
              ORDER BY e.txid, e.id
              LIMIT p_limit)
            UNION ALL
            -- (b) transactions that started after done and completed by the window:
            --     one range, from max(xmax(done), position) up to xmax(window).
            --     Start-up pruning: the keyset bound is a row comparison, which PostgreSQL
            --     cannot prune partitions by, so the branch also states txid >= xmax(done).
            --     It is implied by the row comparison and changes no row; the btree still
            --     starts at the row comparison, the stronger lower bound of that column, and
            --     ends at xmax(window). With it a page sets up its scans only on the
            --     partitions from the position's up, however many closed partitions history
            --     keeps. With the upper bound it makes a range, which the generic plan
            --     estimates at 0.5 % of the domain; what keeps the page's route join a hash
            --     join nonetheless is branch (a)'s estimate (fn_iu_route_worker_xip).
            (SELECT o.id, o.txid, o.event_type, o.event_stream, o.created_at
               FROM public.event_outbox o
              WHERE o.event_domain = p_event_domain
                AND (o.txid, o.id) >= (
                        CASE WHEN (p_pos).after_txid >= pg_snapshot_xmax(coalesce((p_pos).done_snapshot, '1:1:'::pg_snapshot))
                             THEN (p_pos).after_txid
                             ELSE pg_snapshot_xmax(coalesce((p_pos).done_snapshot, '1:1:'::pg_snapshot)) END,
                        CASE WHEN (p_pos).after_txid >= pg_snapshot_xmax(coalesce((p_pos).done_snapshot, '1:1:'::pg_snapshot))
                             THEN (p_pos).after_id
                             ELSE '00000000-0000-0000-0000-000000000000'::uuid END)
                AND o.txid >= pg_snapshot_xmax(coalesce((p_pos).done_snapshot, '1:1:'::pg_snapshot))
                AND o.txid < pg_snapshot_xmax((p_pos).window_snapshot)
                AND (o.txid, o.id) IS DISTINCT FROM ((p_pos).after_txid, (p_pos).after_id)
                AND pg_visible_in_snapshot(o.txid, (p_pos).window_snapshot)
                AND (p_bucket_lo IS NULL OR iu_core.fn_iu_route_group_claims(o.id, o.event_stream, p_bucket_lo, p_bucket_hi) IS NOT NULL)
              ORDER BY o.txid, o.id
              LIMIT p_limit)
           ) u
     ORDER BY u.txid, u.id
     LIMIT p_limit
$$;

COMMENT ON FUNCTION iu_core.fn_iu_route_worker_claim(text, iu_core.iu_route_window, integer, integer, integer) IS
    'Internal (route worker): the next page of a snapshot-difference window, two bounded index range scans on event_outbox (event_domain, txid, id); a group member''s (its buckets given) skips the other members'' events inside the scans.';
