CREATE OR REPLACE FUNCTION public.fn_iu_partition_maintain()
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_partition_maintain() -> jsonb
    -- Keeps both history tables partitioned ahead of the transaction ids in use, and records
    -- when a partition closed. Called by the runner (tick, and the run loop on the stale-check
    -- cadence); idempotent and safe to call concurrently (a transaction-scoped advisory lock:
    -- a second caller returns {"busy": true} at once).
    -- Algorithm: the next partition starts at the highest existing upper bound, or above the
    -- highest txid already in a default partition (so no row ever has to move); partitions of
    -- retention.partition_txids txids are added, to both tables with the same bounds, while
    -- the room left above the next txid is under half a width (so between half and one and a
    -- half widths of txids are always ready). Every partition whose upper
    -- bound is <= xmin of the current snapshot (no transaction can still write into it) gets
    -- closed_at = now() once. Adding a partition (built apart, then ATTACHed) takes SHARE
    -- UPDATE EXCLUSIVE on the parent, which no INSERT or SELECT waits for, and ACCESS
    -- EXCLUSIVE on the default partition (scanned for rows of the new range); it waits at most
    -- 2 s for those (DDL or VACUUM on the table, a writer into the default partition): on a
    -- timeout it returns {"lock_timeout": true} and the next call tries again.
    -- Returns: busy, created[], closed[], partitions, newest_upper_txid, next_txid,
    --          ahead_txids, width_txids, default_rows{event_outbox, iu_route_attempt}, lock_timeout,
    --          default_raced (a producer's row reached the default partition above what this call
    --          saw, while it waited: nothing created, the next call starts above it).
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_width   bigint;
    v_next    xid8;
    v_upper   xid8;
    v_lo      xid8;
    v_top     xid8;
    v_old_lt  text;
    v_created text[] := '{}';
    v_closed  text[];
    v_timeout boolean := false;
    v_raced   boolean := false;
BEGIN
    v_width := coalesce(iu_core.fn_iu_retention_config('fn_iu_partition_maintain', 'retention.partition_txids', 1000, 1000000000000), 100000000);
    IF NOT pg_try_advisory_xact_lock(hashtext('iu_core.partition_maintain')) THEN
        RETURN jsonb_build_object('busy', true);
    END IF;
    v_next := pg_snapshot_xmax(pg_current_snapshot());

    v_old_lt := current_setting('lock_timeout');
    PERFORM set_config('lock_timeout', '2s', true);
    BEGIN
        SELECT p.upper_txid INTO v_upper FROM public.iu_history_partition p ORDER BY p.upper_txid DESC LIMIT 1;
        v_lo := v_upper;
        -- above the highest row already in a default partition (min/max of xid8 need PostgreSQL 14)
        SELECT o.txid INTO v_top FROM ONLY public.event_outbox_default o ORDER BY o.txid DESC LIMIT 1;
        IF v_top >= v_lo THEN v_lo := (v_top::text::numeric + 1)::text::xid8; END IF;
        SELECT a.event_txid INTO v_top FROM ONLY public.iu_route_attempt_default a ORDER BY a.event_txid DESC LIMIT 1;
        IF v_top >= v_lo THEN v_lo := (v_top::text::numeric + 1)::text::xid8; END IF;
        WHILE v_lo::text::numeric - v_next::text::numeric < v_width / 2 LOOP
            v_upper := (v_lo::text::numeric + v_width)::text::xid8;
            v_created := v_created || iu_core.fn_iu_partition_create('event_outbox', v_lo, v_upper);
            v_created := v_created || iu_core.fn_iu_partition_create('iu_route_attempt', v_lo, v_upper);
            v_lo := v_upper;
        END LOOP;
    EXCEPTION
        WHEN lock_not_available THEN
            v_timeout := true;
            v_created := '{}';
        WHEN check_violation THEN
            -- A producer's row reached the default partition above the highest one this
            -- call could see (its transaction committed while the new partition waited for
            -- the default partition's lock): nothing is created now; the next call starts
            -- above that row.
            v_raced := true;
            v_created := '{}';
    END;
    PERFORM set_config('lock_timeout', v_old_lt, true);
    SELECT p.upper_txid INTO v_upper FROM public.iu_history_partition p ORDER BY p.upper_txid DESC LIMIT 1;

    v_closed := iu_core.fn_iu_partition_record_closes();

    RETURN jsonb_build_object(
        'busy', false,
        'lock_timeout', v_timeout,
        'default_raced', v_raced,
        'created', to_jsonb(v_created),
        'closed', to_jsonb(v_closed),
        'partitions', (SELECT count(*) FROM public.iu_history_partition),
        'newest_upper_txid', v_upper::text,
        'next_txid', v_next::text,
        'ahead_txids', v_upper::text::numeric - v_next::text::numeric,
        'width_txids', v_width,
        'default_rows', jsonb_build_object(
            'event_outbox', (SELECT count(*) FROM (SELECT 1 FROM ONLY public.event_outbox_default LIMIT 1000) d),
            'iu_route_attempt', (SELECT count(*) FROM (SELECT 1 FROM ONLY public.iu_route_attempt_default LIMIT 1000) d)));
END;
$$;
