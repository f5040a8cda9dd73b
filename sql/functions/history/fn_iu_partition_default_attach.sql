CREATE OR REPLACE FUNCTION iu_core.fn_iu_partition_default_attach(p_table text, p_lower xid8, p_upper xid8)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_partition_default_attach(p_table, p_lower, p_upper) -> text: empties the default
    -- partition of p_table without moving a row: the default table itself becomes the range
    -- partition [p_lower, p_upper) (renamed <table>_p<lower>, its keys with it), and a new,
    -- empty default partition takes its place (with its local PRIMARY KEY (id), the claim
    -- index's name and the TRUNCATE guard, as the conversion made the first one). The rows
    -- stay where they are, so a reader holding an older snapshot sees exactly what it saw
    -- before; the caller chose [p_lower, p_upper) as the gap between partitions that holds
    -- every row of the default partition (ATTACH checks it: a row outside fails it with
    -- check_violation, and nothing changes). The one cost that grows with the rows is that
    -- check, a scan of the old default partition. The caller holds ACCESS EXCLUSIVE on the
    -- parent and its default partition (fn_iu_history_lock_tables). Internal.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_default text := p_table || '_default';
    v_name    text := p_table || '_p' || lpad(p_lower::text, 20, '0');
    v_con     text;
BEGIN
    EXECUTE format('ALTER TABLE public.%I DETACH PARTITION public.%I', p_table, v_default);
    EXECUTE format('ALTER TABLE public.%I RENAME TO %I', v_default, v_name);
    EXECUTE format('ALTER TABLE public.%I RENAME CONSTRAINT %I TO %I', v_name, v_default || '_pkey', v_name || '_pkey');
    IF p_table = 'event_outbox' THEN
        EXECUTE format('ALTER INDEX public.%I RENAME TO %I', v_default || '_domain_txid_idx', v_name || '_domain_txid_idx');
    ELSE
        SELECT c.conname INTO v_con FROM pg_constraint c
         WHERE c.conrelid = to_regclass('public.' || quote_ident(v_name)) AND c.contype = 'u';
        EXECUTE format('ALTER TABLE public.%I RENAME CONSTRAINT %I TO %I', v_name, v_con, v_name || '_key_attempt_uq');
    END IF;
    -- No default partition now: the ATTACH scans only the rows it brings.
    EXECUTE format('ALTER TABLE public.%I ATTACH PARTITION public.%I FOR VALUES FROM (%L) TO (%L)', p_table, v_name, p_lower, p_upper);
    EXECUTE format('CREATE TABLE public.%I PARTITION OF public.%I DEFAULT', v_default, p_table);
    EXECUTE format('ALTER TABLE public.%I ADD CONSTRAINT %I PRIMARY KEY (id)', v_default, v_default || '_pkey');
    IF p_table = 'event_outbox' THEN
        EXECUTE format('ALTER INDEX %s RENAME TO %I',
                       (SELECT i.inhrelid::regclass FROM pg_inherits i JOIN pg_index x ON x.indexrelid = i.inhrelid
                         WHERE i.inhparent = to_regclass('public.event_outbox_domain_txid_idx')
                           AND x.indrelid = to_regclass('public.event_outbox_default')),
                       v_default || '_domain_txid_idx');
    END IF;
    PERFORM iu_core.fn_iu_partition_guard(to_regclass('public.' || quote_ident(p_table)), to_regclass('public.' || quote_ident(v_default)));
    INSERT INTO public.iu_history_partition (partition_name, table_name, lower_txid, upper_txid)
    VALUES (v_name, p_table, p_lower, p_upper);
    RETURN v_name;
END;
$$;
