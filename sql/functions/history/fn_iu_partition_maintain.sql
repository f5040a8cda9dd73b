CREATE OR REPLACE FUNCTION public.fn_iu_partition_maintain()
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- The bound of any wait not covered below (a read behind an operator's DDL on these tables):
-- restored when the function returns.
SET lock_timeout = '2s'
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_partition_maintain() -> jsonb
    -- Keeps both history tables partitioned two to three widths (retention.partition_txids)
    -- ahead of the transaction ids in use, empties the default partitions when rows reached
    -- them, re-cuts the partitions ahead when the width setting changed, and records when a
    -- partition closed (and moves the bound the route worker's idle question prunes closed
    -- partitions by: fn_iu_outbox_hot_refresh). Called by the runner (tick, and the run loop on the stale-check
    -- cadence); idempotent and safe to call concurrently. Call it with autocommit: what it
    -- changes holds its locks until the caller's transaction ends, so a session that
    -- changed something ends itself after 2 s idle in that transaction (its changes roll
    -- back; the next call makes them again).
    --
    -- Locks, in the lock order (sql/functions/history/README.md): first the maintenance lock
    -- (fn_iu_history_lock, waited for at most 1 s: a retention run or another maintenance
    -- call is done by then; when not, busy, naming the holder), then
    -- the tables' locks, all at once or none within about a second, no wait longer than 20 ms
    -- (fn_iu_history_lock_tables). No producer or worker waits longer than that on it, and no
    -- reader of the tables, in whatever order it reads them, can deadlock it.
    -- What it changes and how: fn_iu_partition_extend (ahead, or caught up from behind in one
    -- call). Every failure is an answer, never an error (a bad width setting excepted: 22023):
    --   busy            another session holds the maintenance lock: holder {pid, login, ...}
    --   lock_timeout    the tables' locks were not free: nothing changed; blocked_by names
    --                   who held them; the next call tries again
    --   default_raced   a txid reached a range while it was being attached: nothing
    --                   changed; the next call takes the other way
    --   error           any other failure of a lock or a race ({sqlstate, message}):
    --                   nothing changed
    -- Returns: busy, [holder], lock_timeout, [blocked_by], default_raced, [error], behind,
    --          created[], default_attached[], recut[], closed[], partitions,
    --          newest_upper_txid, next_txid, ahead_txids, width_txids, default_stuck,
    --          default_rows{event_outbox, iu_route_attempt} (counted up to 1,000; null when
    --          another session holds them locked).
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_width   bigint;
    v_upper   xid8;
    v_next    xid8;
    v_closed  text[];
    v_done    jsonb := jsonb_build_object('created', '[]'::jsonb, 'default_attached', '[]'::jsonb, 'recut', '[]'::jsonb,
                                         'behind', false, 'default_stuck', false);
    v_timeout boolean := false;
    v_raced   boolean := false;
    v_blocked jsonb;
    v_error   jsonb;
    v_state   text;
    v_msg     text;
    v_rows    jsonb;
BEGIN
    v_width := coalesce(iu_core.fn_iu_retention_config('fn_iu_partition_maintain', 'retention.partition_txids', 1000, 1000000000000), 100000000);
    IF NOT iu_core.fn_iu_history_lock(1000) THEN
        RETURN jsonb_build_object('busy', true, 'holder', iu_core.fn_iu_history_lock_holder());
    END IF;
    BEGIN
        v_closed := iu_core.fn_iu_partition_record_closes();
    EXCEPTION WHEN lock_not_available THEN
        v_closed := '{}';   -- recorded by a later call
    END;

    BEGIN
        v_done := iu_core.fn_iu_partition_extend(v_width);
    EXCEPTION
        WHEN lock_not_available THEN
            v_timeout := true;
            v_blocked := iu_core.fn_iu_history_blockers(ARRAY[
                to_regclass('public.iu_route_attempt'), to_regclass('public.iu_route_attempt_default'),
                to_regclass('public.event_outbox'), to_regclass('public.event_outbox_default')]);
        WHEN check_violation THEN
            v_raced := true;
        WHEN deadlock_detected OR serialization_failure OR object_in_use OR undefined_table OR duplicate_table THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
            v_error := jsonb_build_object('sqlstate', v_state, 'message', v_msg);
    END;
    IF jsonb_array_length(v_done->'created') > 0 OR jsonb_array_length(v_done->'default_attached') > 0
       OR jsonb_array_length(v_done->'recut') > 0 THEN
        -- Changes hold ACCESS EXCLUSIVE or SHARE UPDATE EXCLUSIVE locks until the caller's
        -- transaction ends: a caller that leaves it open must not hold producers or readers.
        PERFORM set_config('idle_in_transaction_session_timeout', '2s', true);
    END IF;

    -- The bound the route worker's idle question prunes closed partitions by follows the
    -- closes and the partitions (fn_iu_outbox_hot_txid). A catalog write only when it moved.
    BEGIN
        PERFORM iu_core.fn_iu_outbox_hot_refresh();
    EXCEPTION WHEN lock_not_available THEN
        NULL;   -- moved by a later call
    END;

    SELECT p.upper_txid INTO v_upper FROM public.iu_history_partition p ORDER BY p.upper_txid DESC LIMIT 1;
    v_next := pg_snapshot_xmax(pg_current_snapshot());
    BEGIN
        PERFORM set_config('lock_timeout', '100ms', true);
        v_rows := jsonb_build_object(
            'event_outbox', (SELECT count(*) FROM (SELECT 1 FROM ONLY public.event_outbox_default LIMIT 1000) d),
            'iu_route_attempt', (SELECT count(*) FROM (SELECT 1 FROM ONLY public.iu_route_attempt_default LIMIT 1000) d));
    EXCEPTION WHEN lock_not_available THEN
        v_rows := NULL;     -- not readable now (someone holds them): null, not a guess
    END;
    RETURN jsonb_strip_nulls(jsonb_build_object('blocked_by', v_blocked, 'error', v_error)) || v_done || jsonb_build_object(
        'busy', false,
        'lock_timeout', v_timeout,
        'default_raced', v_raced,
        'closed', to_jsonb(v_closed),
        'partitions', (SELECT count(*) FROM public.iu_history_partition),
        'newest_upper_txid', v_upper::text,
        'next_txid', v_next::text,
        'ahead_txids', v_upper::text::numeric - v_next::text::numeric,
        'width_txids', v_width,
        'default_rows', v_rows);
END;
$$;
