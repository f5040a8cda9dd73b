CREATE OR REPLACE FUNCTION iu_core.fn_iu_forget_config(p_keys text[])
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- fn_iu_forget_config(keys) -> rows deleted: a Down takes back the dot_config keys its
    -- Up inserted, except the keys the first generation already had when the package
    -- adopted the table (recorded by fn_iu_adopt_dot_config): those stay, with whatever
    -- value they hold now. The package inserts its keys ON CONFLICT DO NOTHING, so a legacy
    -- key (queue.heartbeat.enabled, the two gates) was never the package's to delete.
    -- Called by the Downs that insert keys. Internal.
DECLARE
    v_n integer;
BEGIN
    DELETE FROM public.dot_config d
     WHERE d.key = ANY (p_keys)
       AND NOT EXISTS (SELECT 1 FROM iu_core.iu_adoption a
                        WHERE a.object = 'public.dot_config' AND a.kind = 'table'
                          AND a.detail->'keys' ? d.key);
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END;
$$;
