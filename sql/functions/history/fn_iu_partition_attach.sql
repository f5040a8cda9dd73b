CREATE OR REPLACE FUNCTION iu_core.fn_iu_partition_attach(p_table text, p_built text, p_lower xid8, p_upper xid8)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_partition_attach(p_table, p_built, p_lower, p_upper) -> text: attaches p_built, a
    -- table fn_iu_partition_build made, as the partition of p_table for txids [p_lower,
    -- p_upper), and records it in iu_history_partition. When the range starts elsewhere
    -- than the table was built for (maintenance that caught up from behind learns its lower
    -- bound only under its locks), the table and its keys are renamed first, so the name
    -- always says the lower bound. The caller holds the locks (fn_iu_history_lock_tables):
    -- at least SHARE UPDATE EXCLUSIVE on the parent and ACCESS EXCLUSIVE on its default
    -- partition, which ATTACH scans for rows of the new range (a row there fails it with
    -- check_violation: nothing is attached). Catalog work only. Internal.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_name text := p_table || '_p' || lpad(p_lower::text, 20, '0');
BEGIN
    IF p_built <> v_name THEN
        EXECUTE format('ALTER TABLE public.%I RENAME TO %I', p_built, v_name);
        EXECUTE format('ALTER TABLE public.%I RENAME CONSTRAINT %I TO %I', v_name, p_built || '_pkey', v_name || '_pkey');
        IF p_table = 'event_outbox' THEN
            EXECUTE format('ALTER INDEX public.%I RENAME TO %I', p_built || '_domain_txid_idx', v_name || '_domain_txid_idx');
        ELSE
            EXECUTE format('ALTER TABLE public.%I RENAME CONSTRAINT %I TO %I', v_name, p_built || '_key_attempt_uq', v_name || '_key_attempt_uq');
        END IF;
    END IF;
    EXECUTE format('ALTER TABLE public.%I ATTACH PARTITION public.%I FOR VALUES FROM (%L) TO (%L)', p_table, v_name, p_lower, p_upper);
    INSERT INTO public.iu_history_partition (partition_name, table_name, lower_txid, upper_txid)
    VALUES (v_name, p_table, p_lower, p_upper);
    RETURN v_name;
END;
$$;
