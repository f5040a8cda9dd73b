CREATE OR REPLACE FUNCTION iu_core.fn_iu_partition_guard(p_parent regclass, p_partition regclass)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_partition_guard(p_parent, p_partition): copy the parent's statement-level TRUNCATE
    -- triggers onto one partition (PostgreSQL clones row triggers to partitions, never
    -- statement triggers), so TRUNCATE of a single partition is refused like TRUNCATE of the
    -- table. Idempotent. Internal.
    -- ---------------------------------------------------------------------------------------
DECLARE
    r record;
BEGIN
    FOR r IN SELECT t.tgname, p.oid::regprocedure AS fn
               FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
              WHERE t.tgrelid = p_parent AND NOT t.tgisinternal
                AND t.tgtype & 34 = 34          -- BEFORE (2) TRUNCATE (32)
    LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_trigger x WHERE x.tgrelid = p_partition AND x.tgname = r.tgname) THEN
            EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION %s',
                           r.tgname, p_partition, r.fn);
        END IF;
    END LOOP;
END;
$$;
