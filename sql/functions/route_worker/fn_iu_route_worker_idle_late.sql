CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_idle_late(p_event_domain text, p_done pg_snapshot, p_now pg_snapshot)
RETURNS SETOF text
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_idle_late(p_event_domain, p_done, p_now): half (a) of the idle path's
    -- outbox question (fn_iu_route_worker_idle_rows): 'late_commit' when a transaction in
    -- p_done's in-progress list has completed by p_now and wrote a row of the domain (one
    -- index probe per such transaction), none otherwise. Asked by fn_iu_route_worker_run only
    -- when p_done lists a transaction in progress and p_now no longer lists one of them (while
    -- all still run, none is visible to p_now and there is nothing to find; the probe,
    -- fn_iu_route_worker_idle_probe, asks half (b)). Bounded by the outbox's hot bound
    -- (fn_iu_outbox_hot_txid), a no-op for the positions it is asked for (at or above it),
    -- and by p_done's xmin and xmax: the closed partitions are not in its plan, the others
    -- outside the range are pruned when it starts; when p_done lists nothing, its upper bound
    -- is 0 and no scan is started at all.
    -- Internal: inlinable SQL, owner only.
    -- ---------------------------------------------------------------------------------------
    SELECT 'late_commit'
      FROM pg_snapshot_xip(p_done) AS x(xip_txid)
     CROSS JOIN LATERAL (SELECT 1 FROM public.event_outbox o
                          WHERE o.event_domain = p_event_domain
                            AND o.txid = x.xip_txid
                            AND o.txid >= iu_core.fn_iu_outbox_hot_txid(p_event_domain)
                            AND o.txid >= pg_snapshot_xmin(p_done)
                            AND o.txid < CASE WHEN pg_snapshot_xmin(p_done) < pg_snapshot_xmax(p_done)
                                              THEN pg_snapshot_xmax(p_done) ELSE '0'::xid8 END
                          LIMIT 1) e          -- LATERAL ... LIMIT 1: one probe, never a hash of the domain
     WHERE pg_visible_in_snapshot(x.xip_txid, p_now)
$$;
