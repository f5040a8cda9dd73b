CREATE OR REPLACE FUNCTION iu_core.fn_iu_partition_build(p_table text, p_lower xid8)
RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_partition_build(p_table, p_lower) -> text: a table of its own, shaped to become
    -- the partition of p_table ('event_outbox' or 'iu_route_attempt') that starts at p_lower,
    -- named <table>_p<lower, 20 digits> so names sort by range: the parent's columns,
    -- defaults and CHECKs, its local key PRIMARY KEY (id), the indexes the parent's
    -- partitioned indexes need (event_outbox: the claim index <name>_domain_txid_idx;
    -- iu_route_attempt: the re-scan guard UNIQUE (idempotency_key, attempt_no, event_txid),
    -- <name>_key_attempt_uq), and the TRUNCATE guard. ATTACH then adopts these indexes
    -- instead of building new ones: everything that takes time is done here, before any lock
    -- a producer or a reader could wait for (fn_iu_partition_attach is catalog work only).
    -- Nobody else can see the table until the caller commits. Internal.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_name text := p_table || '_p' || lpad(p_lower::text, 20, '0');
BEGIN
    EXECUTE format('CREATE TABLE public.%I (LIKE public.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', v_name, p_table);
    EXECUTE format('ALTER TABLE public.%I ADD CONSTRAINT %I PRIMARY KEY (id)', v_name, v_name || '_pkey');
    IF p_table = 'event_outbox' THEN
        EXECUTE format('CREATE INDEX %I ON public.%I (event_domain, txid, id)', v_name || '_domain_txid_idx', v_name);
    ELSE
        EXECUTE format('ALTER TABLE public.%I ADD CONSTRAINT %I UNIQUE (idempotency_key, attempt_no, event_txid)',
                       v_name, v_name || '_key_attempt_uq');
    END IF;
    PERFORM iu_core.fn_iu_partition_guard(to_regclass('public.' || quote_ident(p_table)), to_regclass('public.' || quote_ident(v_name)));
    RETURN v_name;
END;
$$;
