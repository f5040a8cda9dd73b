CREATE OR REPLACE FUNCTION iu_core.fn_iu_outbox_hot_refresh()
RETURNS xid8
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_outbox_hot_refresh() -> xid8: brings the two constants the route worker's idle
    -- question plans event_outbox by up to date, replacing each function only when its bound
    -- moved, and returns the lower one:
    --   fn_iu_outbox_hot_txid: the lower bound of the oldest partition not closed yet
    --     (iu_history_partition; '0' while the oldest open partition has no lower bound, i.e.
    --     starts at the beginning; the newest partition's upper bound when every one is
    --     closed). It only moves up, as partitions close.
    --   fn_iu_outbox_hot_ceiling: the upper bound of the partition the next transaction id
    --     lands in now (the largest xid8 while that id lies in no range partition: maintenance
    --     behind, rows in the default partition). It moves up once per partition width of
    --     transaction ids; until it has, a poll whose snapshot passed it also asks the rows
    --     above it (fn_iu_route_worker_idle_above), as every poll does before the first
    --     refresh (the installed ceiling is 0).
    -- Called by fn_iu_partition_maintain after it recorded closes and changed partitions,
    -- under the maintenance lock (so two calls never race). Replacing a function is a catalog
    -- write that discards the plans made with its old bound (they are made again at their
    -- next use). Internal.
    -- The new bodies are the current ones with their constant replaced, so their headers stay
    -- as the source files have them.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_bound   xid8;
    v_ceiling xid8;
    v_next    xid8 := pg_snapshot_xmax(pg_current_snapshot());
    v_fn      text;
    v_value   text;
    v_src     text;
    v_new     text;
BEGIN
    -- Every partition closed (maintenance was behind and has not added the next one yet):
    -- everything below the newest one's upper bound is closed, and rows above it are in the
    -- default partition, which no lower bound prunes.
    -- (ORDER BY ... LIMIT 1: min and max of xid8 exist from PostgreSQL 16 on only.)
    v_bound := coalesce(
        (SELECT coalesce(p.lower_txid, '0'::xid8) FROM public.iu_history_partition p
          WHERE p.table_name = 'event_outbox' AND p.closed_at IS NULL
          ORDER BY p.lower_txid NULLS FIRST LIMIT 1),
        (SELECT p.upper_txid FROM public.iu_history_partition p
          WHERE p.table_name = 'event_outbox' ORDER BY p.upper_txid DESC NULLS LAST LIMIT 1),
        '0'::xid8);
    -- The partition the next txid lands in: not closed (its upper bound lies above every
    -- txid in use), so [v_bound, v_ceiling) covers it and every open partition below it.
    v_ceiling := coalesce(
        (SELECT p.upper_txid FROM public.iu_history_partition p
          WHERE p.table_name = 'event_outbox' AND p.upper_txid > v_next
            AND (p.lower_txid IS NULL OR p.lower_txid <= v_next)
          ORDER BY p.upper_txid LIMIT 1),
        '18446744073709551615'::xid8);
    FOR v_fn, v_value IN VALUES ('fn_iu_outbox_hot_txid', v_bound::text),
                                ('fn_iu_outbox_hot_ceiling', v_ceiling::text) LOOP
        SELECT f.prosrc INTO v_src FROM pg_proc f
         WHERE f.oid = format('iu_core.%I(text)', v_fn)::regprocedure;
        v_new := regexp_replace(v_src, '''[0-9]+''::pg_catalog\.xid8', quote_literal(v_value) || '::pg_catalog.xid8');
        IF v_new IS DISTINCT FROM v_src THEN
            EXECUTE format('CREATE OR REPLACE FUNCTION iu_core.%I(p_event_domain text) RETURNS xid8 LANGUAGE sql STABLE AS %L',
                           v_fn, v_new);
        END IF;
    END LOOP;
    RETURN v_bound;
END;
$$;
