CREATE OR REPLACE FUNCTION iu_core.fn_iu_adopt_add_check(p_table regclass, p_name text, p_check text, p_validate boolean DEFAULT true)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- fn_iu_adopt_add_check(table, name, check, validate) -> added: a CHECK of the package's
    -- shape on an adopted table, added NOT VALID (no scan under the table's lock) and then
    -- validated when p_validate (the legacy rows are known to hold it: the small tables), or
    -- left NOT VALID (new rows are checked, old ones kept as they are); a constraint of that
    -- name already there is left alone. Records its removal for the rollback. Internal.
BEGIN
    IF EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = p_table AND conname = p_name) THEN
        RETURN false;
    END IF;
    EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I CHECK (%s) NOT VALID', p_table, p_name, p_check);
    IF p_validate THEN
        EXECUTE format('ALTER TABLE %s VALIDATE CONSTRAINT %I', p_table, p_name);
    END IF;
    PERFORM iu_core.fn_iu_adopt_record(p_table::text, 'check', format('ALTER TABLE %s DROP CONSTRAINT %I', p_table, p_name),
                                       jsonb_build_object('constraint', p_name));
    RETURN true;
END;
$$;
