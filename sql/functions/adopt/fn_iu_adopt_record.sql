CREATE OR REPLACE FUNCTION iu_core.fn_iu_adopt_record(p_object text, p_kind text, p_definition text, p_detail jsonb DEFAULT '{}')
RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    -- fn_iu_adopt_record(object, kind, definition, detail): one line of the adoption ledger
    -- (iu_core.iu_adoption): a legacy object adoption replaced, dropped or altered, with the
    -- SQL that recreates it, so the rollback can give the legacy shape back. Internal.
    INSERT INTO iu_core.iu_adoption (object, kind, definition, detail)
    VALUES (p_object, p_kind, p_definition, coalesce(p_detail, '{}'::jsonb))
$$;
