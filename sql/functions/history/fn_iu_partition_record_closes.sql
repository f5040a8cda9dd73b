CREATE OR REPLACE FUNCTION iu_core.fn_iu_partition_record_closes()
RETURNS text[]
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_partition_record_closes() -> text[]: THE closed rule. A partition is closed once
    -- its upper bound is at or below xmin of the current snapshot: every transaction id in its
    -- range has finished, so no row can still arrive in it and every row in it is older than
    -- that moment. Records closed_at = now() for each partition that closed since the last
    -- call and returns their names. Maintenance and retention both call it (retention judges
    -- ages by closed_at). Internal.
    -- ---------------------------------------------------------------------------------------
    WITH c AS (
        UPDATE public.iu_history_partition p SET closed_at = now()
         WHERE p.closed_at IS NULL
           AND p.upper_txid <= pg_snapshot_xmin(pg_current_snapshot())
        RETURNING p.partition_name)
    SELECT coalesce(array_agg(c.partition_name ORDER BY c.partition_name), '{}') FROM c
$$;
