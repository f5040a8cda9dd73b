CREATE OR REPLACE FUNCTION iu_core.fn_iu_require_empty_history_at(p_version integer)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- fn_iu_require_empty_history_at(version): the rollback rule for the tables the Down of
    -- migration <version> drops (fn_iu_rollback_tables): each one the package created must
    -- hold no row it did not create, or the rollback refuses with IU005
    -- (fn_iu_require_empty_history). Adopted tables are skipped: their Down keeps them.
    -- Called by those Downs. Internal.
DECLARE
    r record;
BEGIN
    FOR r IN SELECT h.table_name, h.user_rows FROM iu_core.fn_iu_rollback_tables() h
              WHERE h.version = p_version
                AND to_regclass(h.table_name) IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM iu_core.iu_adoption a WHERE a.object = h.table_name AND a.kind = 'table')
              ORDER BY h.table_name LOOP
        PERFORM iu_core.fn_iu_require_empty_history(r.table_name, r.user_rows);
    END LOOP;
END;
$$;
