CREATE OR REPLACE FUNCTION iu_core.fn_iu_adopt_add_column(p_table regclass, p_column text, p_definition text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- fn_iu_adopt_add_column(table, column, definition) -> added: adds a column the package's
    -- shape has and the adopted table lacks (definition: type, default, NOT NULL), and records
    -- its removal for the rollback; a column of that name already there is left alone. A
    -- constant or stable default adds it without a rewrite. Internal.
BEGIN
    IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = p_table AND attname = p_column AND NOT attisdropped) THEN
        RETURN false;
    END IF;
    EXECUTE format('ALTER TABLE %s ADD COLUMN %I %s', p_table, p_column, p_definition);
    PERFORM iu_core.fn_iu_adopt_record(p_table::text, 'column', format('ALTER TABLE %s DROP COLUMN %I', p_table, p_column),
                                       jsonb_build_object('column', p_column));
    RETURN true;
END;
$$;
