CREATE OR REPLACE FUNCTION iu_core.fn_iu_rollback_check(p_from integer, p_to integer)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- fn_iu_rollback_check(from, to): a rollback from version <from> down to version <to>,
    -- checked before any Down runs: the rollback rule of every migration it would undo
    -- (fn_iu_require_empty_history_at), all of them, then one refusal (IU005) naming every
    -- table that holds rows the package did not create. So a refused rollback leaves the
    -- database exactly as it was instead of half rolled back. Only reads. iu-runner migrate
    -- down calls it first; plain goose reaches the same rule inside the Down of the
    -- migration concerned. Internal.
DECLARE
    v       integer;
    v_msgs  text[] := '{}';
    v_hint  text;
BEGIN
    FOR v IN SELECT g FROM generate_series(p_from, p_to + 1, -1) g LOOP
        BEGIN
            PERFORM iu_core.fn_iu_require_empty_history_at(v);
        EXCEPTION WHEN SQLSTATE 'IU005' THEN
            v_msgs := v_msgs || SQLERRM;
        END;
    END LOOP;
    IF cardinality(v_msgs) > 0 THEN
        RAISE EXCEPTION E'iu-core rollback to version % refused before changing anything:\n  %', p_to, array_to_string(v_msgs, E'\n  ')
            USING ERRCODE = 'IU005',
                  HINT = 'Back the tables up first (pg_dump -t <table>). To drop their rows on purpose: iu-runner migrate down --to N --drop-history (the session setting iu.drop_history = ''all'').';
    END IF;
END;
$$;
