CREATE OR REPLACE FUNCTION iu_core.fn_iu_history_health()
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_history_health() -> jsonb: what v_queue_health's history row says about the
    -- partitions: {status_hint, default_rows, holder_age_seconds, detail}. status_hint:
    --   lock_held     a session holds the partition-maintenance lock without working under
    --                 it (idle in its transaction), or its transaction is 10 s old or more
    --                 (or of an age the owner may not read): maintenance and retention
    --                 answer busy until it lets go; detail.maintenance_lock_holder names it
    --   default_rows  rows sit in a default partition (maintenance fell behind; its next
    --                 call turns them into a partition of their own)
    --   ok            neither
    -- detail: maintenance_lock_holder (fn_iu_history_lock_holder, also when held briefly),
    -- default_rows{event_outbox, iu_route_attempt} (counted up to 1,000), partitions,
    -- newest_upper_txid, next_txid, ahead_txids. Reads, never raises on a setting. Internal.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_holder  jsonb := iu_core.fn_iu_history_lock_holder();
    v_outbox  bigint := (SELECT count(*) FROM (SELECT 1 FROM ONLY public.event_outbox_default LIMIT 1000) d);
    v_attempt bigint := (SELECT count(*) FROM (SELECT 1 FROM ONLY public.iu_route_attempt_default LIMIT 1000) d);
    v_upper   xid8 := (SELECT p.upper_txid FROM public.iu_history_partition p ORDER BY p.upper_txid DESC LIMIT 1);
    v_next    xid8 := pg_snapshot_xmax(pg_current_snapshot());
    v_age     bigint := (v_holder->>'xact_age_seconds')::bigint;
BEGIN
    RETURN jsonb_build_object(
        'status_hint', CASE WHEN v_holder IS NOT NULL
                             AND (coalesce(v_age >= 10, true) OR coalesce(v_holder->>'state', 'active') <> 'active') THEN 'lock_held'
                            WHEN v_outbox + v_attempt > 0 THEN 'default_rows'
                            ELSE 'ok' END,
        'default_rows', v_outbox + v_attempt,
        'holder_age_seconds', v_age,
        'detail', jsonb_build_object(
            'maintenance_lock_holder', v_holder,
            'default_rows', jsonb_build_object('event_outbox', v_outbox, 'iu_route_attempt', v_attempt),
            'partitions', (SELECT count(*) FROM public.iu_history_partition),
            'newest_upper_txid', v_upper::text,
            'next_txid', v_next::text,
            'ahead_txids', v_upper::text::numeric - v_next::text::numeric));
END;
$$;
