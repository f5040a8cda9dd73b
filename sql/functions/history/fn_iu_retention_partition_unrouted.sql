CREATE OR REPLACE FUNCTION iu_core.fn_iu_retention_partition_unrouted(p_lower xid8, p_upper xid8)
RETURNS text[]
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_retention_partition_unrouted(p_lower, p_upper) -> text[]: the registered route
    -- workers that have NOT passed every row of their domain in the txid range [p_lower,
    -- p_upper) (p_lower NULL: from the start). A worker has passed a row when its txid is
    -- visible in the worker's done_snapshot (every such row is routed); a worker that never
    -- ran, or whose cursor fails fn_iu_route_worker_cursor_check, has passed nothing. Idle
    -- runs do not move done_snapshot, so passing is judged by the
    -- rows, not by the snapshot moving: no row of the domain in the range is still unrouted.
    -- One probe per worker on (event_domain, txid, id), pruned to the range's partition.
    -- Internal (fn_iu_retention_run).
    -- ---------------------------------------------------------------------------------------
    --
-- One plain statement per worker (its domain and snapshot as parameters), not one query
-- correlated over the cursors: the correlated form trips PostgreSQL 13's run-time partition
-- pruning ("could not match partition child tables to plan elements").
DECLARE
    c         record;
    v_done    pg_snapshot;
    v_workers text[] := '{}';
BEGIN
    -- A cursor that fails the cursor sanity rule (recorded in another cluster, or holding
    -- txids ahead of this one: a dump/restore) has passed nothing here: its worker refuses
    -- to run until it is re-anchored, and its snapshot says nothing about this cluster's rows.
    FOR c IN SELECT cur.worker_name, cur.event_domain,
                    CASE WHEN NOT EXISTS (SELECT 1 FROM iu_core.fn_iu_route_worker_cursor_check(cur)) THEN cur.done_snapshot END AS done_snapshot
               FROM public.iu_route_worker_cursor cur ORDER BY cur.worker_name LOOP
        v_done := coalesce(c.done_snapshot, '1:1:'::pg_snapshot);
        IF EXISTS (SELECT 1 FROM public.event_outbox o
                    WHERE o.event_domain = c.event_domain
                      AND o.txid >= greatest(coalesce(p_lower, '0'::xid8), pg_snapshot_xmin(v_done))
                      AND o.txid < p_upper
                      AND NOT pg_visible_in_snapshot(o.txid, v_done)) THEN
            v_workers := v_workers || c.worker_name;
        END IF;
    END LOOP;
    RETURN v_workers;
END;
$$;
