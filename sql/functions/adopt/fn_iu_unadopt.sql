CREATE OR REPLACE FUNCTION iu_core.fn_iu_unadopt(p_table text)
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_unadopt(table) -> the changes undone: gives an adopted table its legacy shape
    -- back, with every row (those written since the adoption included), by replaying what
    -- its adoption recorded in iu_core.iu_adoption, newest first: the columns it added go,
    -- the renamed ones get their names back, the column types their base types, the legacy
    -- CHECKs and triggers return (their functions too, when the rollback of 008 has not
    -- recreated them yet), the package's triggers go, and the table's and columns' comments
    -- are the legacy ones again. The views reading the table are set
    -- aside meanwhile and recreated as they were. Called by the Downs of the table
    -- migrations; the table itself is never dropped. Internal.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_t   regclass := to_regclass(p_table);
    r     record;
    v_fn  text;
    v_n   integer := 0;
    v_aside text[];
BEGIN
    IF v_t IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM iu_core.fn_iu_adopt_lock(ARRAY[v_t]);
    PERFORM iu_core.fn_iu_adopt_detach_views(ARRAY[v_t]);
    FOR r IN SELECT t.tgname FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
              WHERE t.tgrelid = v_t AND NOT t.tgisinternal AND p.pronamespace = 'iu_core'::regnamespace LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', r.tgname, v_t);
    END LOOP;
    -- A user's trigger with a WHEN condition would refuse a column type change: set aside.
    SELECT coalesce(array_agg(pg_get_triggerdef(t.oid) ORDER BY t.tgname), '{}') INTO v_aside
      FROM pg_trigger t WHERE t.tgrelid = v_t AND NOT t.tgisinternal AND t.tgqual IS NOT NULL;
    FOR r IN SELECT t.tgname FROM pg_trigger t WHERE t.tgrelid = v_t AND NOT t.tgisinternal AND t.tgqual IS NOT NULL LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', r.tgname, v_t);
    END LOOP;
    FOR r IN SELECT a.definition FROM iu_core.iu_adoption a
              WHERE a.object = p_table AND a.definition IS NOT NULL
                AND a.kind IN ('comments', 'rows', 'column', 'columns', 'check', 'constraint', 'rename', 'identity', 'column_rule', 'index', 'hc_executor')
              ORDER BY a.id DESC LOOP
        EXECUTE r.definition;
        v_n := v_n + 1;
    END LOOP;
    FOR r IN SELECT a.definition, a.detail FROM iu_core.iu_adoption a
              WHERE a.object = p_table AND a.kind = 'trigger' ORDER BY a.id LOOP
        v_fn := r.detail->>'function';
        IF v_fn IS NOT NULL AND to_regprocedure(v_fn) IS NULL THEN
            PERFORM set_config('check_function_bodies', 'off', true);
            EXECUTE (SELECT f.definition FROM iu_core.iu_adoption f WHERE f.kind = 'function' AND f.object = v_fn ORDER BY f.id LIMIT 1);
            PERFORM iu_core.fn_iu_adopt_restore_acl(v_fn, 'FUNCTION',
                (SELECT f.detail->'acl' FROM iu_core.iu_adoption f WHERE f.kind = 'function' AND f.object = v_fn ORDER BY f.id LIMIT 1));
        END IF;
        EXECUTE r.definition;
        v_n := v_n + 1;
    END LOOP;
    FOREACH v_fn IN ARRAY v_aside LOOP
        EXECUTE v_fn;
    END LOOP;
    DELETE FROM iu_core.iu_adoption a WHERE a.object = p_table;
    PERFORM iu_core.fn_iu_adopt_restore_views();
    RETURN v_n;
END;
$$;
