CREATE OR REPLACE FUNCTION iu_core.fn_iu_require_empty_history(p_table text, p_user_rows text DEFAULT 'true')
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- fn_iu_require_empty_history(table, user_rows) : the rule of every Down that would drop
    -- a table the package created: it drops no row the package did not create in that same
    -- migration. p_user_rows is the predicate of such rows (all rows by default; the
    -- package's own seed rows excluded where a migration seeds some). When there are any,
    -- the rollback refuses (IU005) and says how to drop them on purpose: the session setting
    -- iu.drop_history naming the table (or 'all'), which the operator sets for that one
    -- rollback (iu-runner migrate down --drop-history, or PGOPTIONS). Internal.
DECLARE
    v_n bigint;
BEGIN
    IF to_regclass(p_table) IS NULL THEN
        RETURN;
    END IF;
    IF current_setting('iu.drop_history', true) IN ('all', p_table, split_part(p_table, '.', 2)) THEN
        RETURN;
    END IF;
    EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM %s WHERE %s LIMIT 1000000) s', p_table, p_user_rows) INTO v_n;
    IF v_n > 0 THEN
        RAISE EXCEPTION 'iu-core rollback refused: % holds % rows the package did not create; a rollback never destroys history', p_table, v_n
            USING ERRCODE = 'IU005',
                  HINT = format('Back them up first (pg_dump -t %s). To drop them on purpose, roll back with the setting iu.drop_history = ''%s'' (or ''all''): iu-runner migrate down --to N --drop-history, or PGOPTIONS=''-c iu.drop_history=all'' goose -table iu_core_db_version ... down.', p_table, p_table);
    END IF;
END;
$$;
