CREATE OR REPLACE FUNCTION iu_core.fn_iu_adopt_dead_letter()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- fn_iu_adopt_dead_letter(): the first generation's dead letters (seed migration 008:
    -- the same columns as the package's) stay replayable, in place. Each snapshot gets the
    -- txid its event has now (the package's replay and retention read it; the first
    -- generation's snapshots had none; the rollback takes the key out again); resolved_session_user, the package's CHECKs and its
    -- triggers are added (the legacy no-delete trigger, of the same name, is replaced).
    -- Internal.
DECLARE
    v_t regclass := 'public.iu_route_dead_letter'::regclass;
    r     record;
    v_ids uuid[];
BEGIN
    PERFORM iu_core.fn_iu_adopt_lock(ARRAY[v_t]);
    PERFORM iu_core.fn_iu_adopt_table('public.iu_route_dead_letter');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'resolved_session_user', 'text');
    FOR r IN SELECT t.tgname, pg_get_triggerdef(t.oid) AS def, t.tgfoid::regprocedure AS fn FROM pg_trigger t
              WHERE t.tgrelid = v_t AND NOT t.tgisinternal
                AND t.tgname IN ('trg_iu_route_dead_letter_no_delete', 'trg_iu_route_dead_letter_immutable',
                                 'trg_iu_route_dead_letter_no_truncate') LOOP
        PERFORM iu_core.fn_iu_adopt_record('public.iu_route_dead_letter', 'trigger', r.def, jsonb_build_object('function', r.fn::text));
        EXECUTE format('DROP TRIGGER %I ON public.iu_route_dead_letter', r.tgname);
        IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgfoid = r.fn::oid)
           AND (SELECT pronamespace FROM pg_proc WHERE oid = r.fn::oid) <> 'iu_core'::regnamespace
           AND NOT EXISTS (SELECT 1 FROM iu_core.iu_adoption WHERE kind = 'function' AND object = r.fn::text) THEN
            PERFORM iu_core.fn_iu_adopt_record(r.fn::text, 'function', pg_get_functiondef(r.fn), '{}');
            EXECUTE format('DROP FUNCTION %s', r.fn);
        END IF;
    END LOOP;
    WITH stamped AS (
        UPDATE public.iu_route_dead_letter d
           SET event_snapshot = d.event_snapshot || jsonb_build_object('txid',
                   coalesce((SELECT e.txid::text FROM public.event_outbox e WHERE e.id = d.event_id LIMIT 1), '3'))
         WHERE NOT d.event_snapshot ? 'txid'
        RETURNING d.id)
    SELECT array_agg(id ORDER BY id) INTO v_ids FROM stamped;
    IF v_ids IS NOT NULL THEN
        PERFORM iu_core.fn_iu_adopt_record('public.iu_route_dead_letter', 'rows',
            format('UPDATE public.iu_route_dead_letter SET event_snapshot = event_snapshot - %L WHERE id = ANY (%L::uuid[])', 'txid', v_ids), '{}');
    END IF;
    PERFORM iu_core.fn_iu_adopt_add_check(v_t, 'iu_route_dead_letter_failed_attempts_check', 'failed_attempts > 0');
    PERFORM iu_core.fn_iu_adopt_add_check(v_t, 'iu_route_dead_letter_resolution_ck', '(resolved_at IS NULL) = (resolution IS NULL)', false);
    IF to_regclass('public.iu_route_dead_letter_open_idx') IS NULL THEN
        CREATE INDEX iu_route_dead_letter_open_idx ON public.iu_route_dead_letter (event_domain, last_failed_at)
            WHERE resolved_at IS NULL;
        PERFORM iu_core.fn_iu_adopt_record('public.iu_route_dead_letter', 'index', 'DROP INDEX public.iu_route_dead_letter_open_idx', '{}');
    END IF;
END;
$$;
