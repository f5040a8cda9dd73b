CREATE OR REPLACE FUNCTION iu_core.fn_iu_partition_create(p_table text, p_lower xid8, p_upper xid8)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_partition_create(p_table, p_lower, p_upper): one partition of a history table for
    -- txids [p_lower, p_upper), named <table>_p<lower, 20 digits> so names sort by range, with
    -- its local keys (event_outbox: PRIMARY KEY (id); iu_route_attempt: PRIMARY KEY (id)), its
    -- claim index named <partition>_domain_txid_idx, the TRUNCATE guard, and its row in
    -- iu_history_partition. Internal (fn_iu_partition_maintain and the conversion call it).
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_name text := p_table || '_p' || lpad(p_lower::text, 20, '0');
BEGIN
    -- Built as a table of its own, then ATTACHed: CREATE TABLE ... PARTITION OF would take
    -- an ACCESS EXCLUSIVE lock on the parent until the caller's transaction ends (an
    -- executor may call this inside a transaction it keeps open: every producer would
    -- wait), ATTACH takes SHARE UPDATE EXCLUSIVE, which no INSERT or SELECT conflicts with
    -- (only the default partition, scanned for rows of the new range, is locked).
    EXECUTE format('CREATE TABLE public.%I (LIKE public.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', v_name, p_table);
    EXECUTE format('ALTER TABLE public.%I ADD CONSTRAINT %I PRIMARY KEY (id)', v_name, v_name || '_pkey');
    EXECUTE format('ALTER TABLE public.%I ATTACH PARTITION public.%I FOR VALUES FROM (%L) TO (%L)', p_table, v_name, p_lower, p_upper);
    IF p_table = 'event_outbox' THEN
        -- PostgreSQL names the child of the claim index itself; give it a name that says what it is.
        EXECUTE format('ALTER INDEX %s RENAME TO %I',
                       (SELECT i.inhrelid::regclass FROM pg_inherits i JOIN pg_index x ON x.indexrelid = i.inhrelid
                         WHERE i.inhparent = 'public.event_outbox_domain_txid_idx'::regclass AND x.indrelid = to_regclass('public.' || quote_ident(v_name))),
                       v_name || '_domain_txid_idx');
    END IF;
    PERFORM iu_core.fn_iu_partition_guard(to_regclass('public.' || quote_ident(p_table)), to_regclass('public.' || quote_ident(v_name)));
    INSERT INTO public.iu_history_partition (partition_name, table_name, lower_txid, upper_txid)
    VALUES (v_name, p_table, p_lower, p_upper);
    RETURN v_name;
END;
$$;
