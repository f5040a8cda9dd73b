CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_pending(
    p_event_domain text,
    p_pos          iu_core.iu_route_window
)
RETURNS TABLE (pending bigint, oldest_created_at timestamptz, capped boolean)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- Planned with the argument values, every call: a generic plan cannot know that
-- txid >= xmax(done) selects only the newest rows of the domain and reads the whole
-- outbox to count a caught-up worker's zero rows. With the values, both branches are
-- index range scans on (event_domain, txid, id) whose cost follows the backlog.
SET plan_cache_mode = force_custom_plan
-- A few index probes: starting parallel workers costs more than the whole answer.
SET max_parallel_workers_per_gather = 0
AS $$
    -- ---------------------------------------------------------------------------------------
    -- Internal: what is still waiting for a worker (backlog) and how old the oldest of it is.
    -- Rows not visible in done_snapshot, minus what the open window already consumed; only
    -- committed rows count (the statement's snapshot). The count stops at
    -- fn_iu_route_worker_backlog_cap() = 10,000 (capped:
    -- true), so a look at a worker that never ran, or is far behind, costs the same on a
    -- 10-million-row log as on a small one; oldest_created_at is then the oldest of those.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_cap    integer := iu_core.fn_iu_route_worker_backlog_cap();
    v_xip    xid8;
    v_n      bigint;
    v_min    timestamptz;
    v_total  bigint := 0;
    v_oldest timestamptz;
BEGIN
    -- (a) transactions in progress when done was taken: one index probe per xid, each
    -- planned with its own value (usually none or a handful)
    FOREACH v_xip IN ARRAY coalesce(ARRAY(SELECT pg_snapshot_xip((p_pos).done_snapshot)), '{}') LOOP
        SELECT count(*), min(w.created_at) INTO v_n, v_min
          FROM (SELECT o.created_at
                  FROM public.event_outbox o
                 WHERE o.event_domain = p_event_domain AND o.txid = v_xip
                   AND ((p_pos).window_snapshot IS NULL OR (p_pos).after_txid IS NULL
                        OR NOT pg_visible_in_snapshot(o.txid, (p_pos).window_snapshot)
                        OR (o.txid, o.id) > ((p_pos).after_txid, (p_pos).after_id))
                 LIMIT v_cap + 1) w;
        v_total := v_total + v_n;
        v_oldest := least(v_oldest, v_min);
        EXIT WHEN v_total > v_cap;
    END LOOP;
    -- (b) transactions that started after done: one range, in index order, cut at the cap
    IF v_total <= v_cap THEN
        SELECT count(*), min(w.created_at) INTO v_n, v_min
          FROM (SELECT o.created_at
                  FROM public.event_outbox o
                 WHERE o.event_domain = p_event_domain
                   AND o.txid >= pg_snapshot_xmax(coalesce((p_pos).done_snapshot, '1:1:'::pg_snapshot))
                   AND ((p_pos).window_snapshot IS NULL OR (p_pos).after_txid IS NULL
                        OR NOT pg_visible_in_snapshot(o.txid, (p_pos).window_snapshot)
                        OR (o.txid, o.id) > ((p_pos).after_txid, (p_pos).after_id))
                 ORDER BY o.txid, o.id
                 LIMIT v_cap + 1 - v_total) w;
        v_total := v_total + v_n;
        v_oldest := least(v_oldest, v_min);
    END IF;
    pending := least(v_total, v_cap);
    oldest_created_at := v_oldest;
    capped := v_total > v_cap;
    RETURN NEXT;
END;
$$;
