CREATE OR REPLACE FUNCTION iu_core.fn_iu_adopt_table(p_table regclass, p_detail jsonb DEFAULT '{}')
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_adopt_table(table, detail): the first line of a table's adoption in the ledger
    -- (iu_core.iu_adoption): the table itself (kind 'table', with what its adoption needs to
    -- remember in detail), and its comments as they are now (kind 'comments': the statements
    -- that give the table and each of its columns back exactly the comment it has, or none).
    -- The package comments the tables it owns; the rollback replays the ledger newest first,
    -- so these statements run last, once the columns have their legacy names again.
    -- Called first by each fn_iu_adopt_<table>. Internal.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_sql text;
BEGIN
    PERFORM iu_core.fn_iu_adopt_record(p_table::text, 'table', NULL, coalesce(p_detail, '{}'::jsonb));
    SELECT format('COMMENT ON TABLE %s IS %s', p_table, coalesce(quote_literal(obj_description(p_table, 'pg_class')), 'NULL'))
           || coalesce(string_agg(format('; COMMENT ON COLUMN %s.%I IS %s', p_table, a.attname,
                                         coalesce(quote_literal(col_description(p_table, a.attnum)), 'NULL')), '' ORDER BY a.attnum), '')
      INTO v_sql
      FROM pg_attribute a
     WHERE a.attrelid = p_table AND a.attnum > 0 AND NOT a.attisdropped;
    PERFORM iu_core.fn_iu_adopt_record(p_table::text, 'comments', v_sql, '{}');
END;
$$;
