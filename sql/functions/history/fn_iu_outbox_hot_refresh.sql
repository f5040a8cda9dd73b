CREATE OR REPLACE FUNCTION iu_core.fn_iu_outbox_hot_refresh()
RETURNS xid8
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_outbox_hot_refresh() -> xid8: brings fn_iu_outbox_hot_txid's constant to the
    -- lower bound of event_outbox's oldest partition not closed yet (iu_history_partition;
    -- '0' while the oldest open partition has no lower bound, i.e. starts at the beginning;
    -- the newest partition's upper bound when every one is closed),
    -- replacing that function only when the bound moved; returns the bound. Called by
    -- fn_iu_partition_maintain after it recorded closes and changed partitions, under the
    -- maintenance lock (so two calls never race). The bound only moves up as partitions
    -- close, so it changes once per partition width of transaction ids; replacing the function
    -- is a catalog write that discards the plans made with the old bound (they are made again
    -- at their next use). Internal.
    -- The new body is the current one with its constant replaced, so its header stays as the
    -- source file has it.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_bound xid8;
    v_src   text;
    v_new   text;
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
    SELECT f.prosrc INTO v_src FROM pg_proc f
     WHERE f.oid = 'iu_core.fn_iu_outbox_hot_txid(text)'::regprocedure;
    v_new := regexp_replace(v_src, '''[0-9]+''::pg_catalog\.xid8', quote_literal(v_bound::text) || '::pg_catalog.xid8');
    IF v_new IS DISTINCT FROM v_src THEN
        EXECUTE format('CREATE OR REPLACE FUNCTION iu_core.fn_iu_outbox_hot_txid(p_event_domain text) RETURNS xid8 LANGUAGE sql STABLE AS %L', v_new);
    END IF;
    RETURN v_bound;
END;
$$;
