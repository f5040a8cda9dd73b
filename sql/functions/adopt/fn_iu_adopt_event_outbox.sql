CREATE OR REPLACE FUNCTION iu_core.fn_iu_adopt_event_outbox()
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_adopt_event_outbox() -> what it did: brings a first-generation event_outbox to the
    -- package's shape in place, in the caller's transaction (migration 003, after the install
    -- plan accepted the table). Every row and id stays; nothing is rewritten (measured on
    -- 1,000,000 rows: the whole step holds the table for well under a second). In order:
    --   1. the first generation's worker stops: fn_iu_route_worker_run answers "gated:
    --      iu_core_adoption_in_progress" until the package's replaces it (migration 009), so
    --      nothing audits an event between now and then; its own delivery seam goes
    --   2. the table and the legacy worker's tables are locked (fn_iu_adopt_lock: 200 ms
    --      attempts, so producers never queue long behind the request)
    --   3. the views reading the table are set aside (fn_iu_adopt_detach_views)
    --   4. the legacy CHECKs and append-only trigger on it are recorded and dropped
    --   5. its columns take the package's domains, still without their rules (a domain with
    --      a rule would make PostgreSQL rewrite the table), and txid is added with the
    --      constant 3 for every existing row (no rewrite), then defaults to the inserting
    --      transaction; the caller adds the domains' rules NOT VALID: new rows are checked,
    --      the legacy rows are kept as they are
    --   6. the package's append-only and no-TRUNCATE triggers
    --   7. what each legacy worker never audited (no attempt_no 1 under its key: the events
    --      after its keyset, and those the keyset skipped, such as late commits) is
    --      re-stamped with a txid of its own (4, 5, ... one per set of workers that still owe
    --      it), and each worker's position is recorded: the pg_snapshot of this moment with
    --      those txids listed as still in progress. The worker's first window then holds
    --      exactly those events, each once; every audited event stays behind it for good
    --      (fn_iu_adopt_worker_state writes the position in migration 008)
    --   8. every role that may INSERT into the table (the table, or a column) may execute the
    --      row-rule functions its domains call, and fn_iu_emit_event (kept through the
    --      package's replacement of it: grants survive CREATE OR REPLACE); the roles given
    --      EXECUTE on emit here are recorded, so the rollback takes back exactly those
    --   9. the views are recreated as they were (those on a package-named view wait)
    -- Everything replaced is recorded in iu_core.iu_adoption (fn_iu_unadopt_event_outbox
    -- undoes it). Internal: the installing role runs it through migration 003.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_outbox   regclass := 'public.event_outbox'::regclass;
    v_attempt  regclass := to_regclass('public.iu_route_attempt');
    v_cursor   regclass := to_regclass('public.iu_route_worker_cursor');
    v_run      regprocedure := to_regprocedure('public.fn_iu_route_worker_run(text, integer)');
    v_emit     regprocedure := to_regprocedure('public.fn_iu_emit_event(text, text, text, text, text, text, text, jsonb)');
    v_locks    regclass[];
    v_tries    integer;
    v_views    integer;
    v_snap     pg_snapshot;
    v_group    bigint := 3;
    v_restamp  bigint := 0;
    v_n        bigint;
    v_grantees text[] := '{}';
    v_emit_added text[] := '{}';
    v_aside    text[];
    r          record;
    g          record;
BEGIN
    -- 1. The legacy worker stops until the package's replaces it.
    IF v_run IS NOT NULL THEN
        PERFORM iu_core.fn_iu_adopt_record(v_run::text, 'function', pg_get_functiondef(v_run), '{}');
        IF pg_get_function_arguments(v_run) <> 'p_worker_name text, p_batch_limit integer DEFAULT 100' THEN
            EXECUTE format('DROP FUNCTION %s', v_run);
        END IF;
        CREATE OR REPLACE FUNCTION public.fn_iu_route_worker_run(p_worker_name text, p_batch_limit integer DEFAULT 100)
        RETURNS jsonb LANGUAGE sql
        SET search_path = pg_catalog, pg_temp
        AS $run$
            -- Stand-in while iu-core adopts this database (migrations 003-009): the first
            -- generation's worker must not audit anything in between. Replaced by the package's.
            SELECT pg_catalog.jsonb_build_object('worker', p_worker_name, 'gated', true, 'busy', false,
                       'reason', 'iu_core_adoption_in_progress', 'claimed', 0, 'attempts_written', 0, 'dead_lettered', 0,
                       'dry_run', 0, 'disabled', 0, 'skipped', 0, 'failed', 0, 'sent', 0)
        $run$;
    END IF;
    FOR r IN SELECT p.oid::regprocedure AS sig FROM pg_proc p
              WHERE p.pronamespace = 'public'::regnamespace AND p.proname = 'fn_iu_route_deliver'
                AND pg_get_function_identity_arguments(p.oid) <> 'p_event_snapshot jsonb, p_route_key text, p_route_kind text, p_idempotency_key text' LOOP
        PERFORM iu_core.fn_iu_adopt_record(r.sig::text, 'function', pg_get_functiondef(r.sig), '{}');
        EXECUTE format('DROP FUNCTION %s', r.sig);
    END LOOP;

    -- 2. The table, and the legacy worker's tables (their rows decide what is still to route).
    v_locks := ARRAY[v_outbox];
    IF v_attempt IS NOT NULL THEN v_locks := v_attempt || v_locks; END IF;
    IF v_cursor IS NOT NULL THEN v_locks := v_cursor || v_locks; END IF;
    v_tries := iu_core.fn_iu_adopt_lock(v_locks);
    PERFORM iu_core.fn_iu_adopt_table(v_outbox);

    -- 3. Views reading it.
    v_views := iu_core.fn_iu_adopt_detach_views(ARRAY[v_outbox], 'replace');

    -- 4. The legacy row rules on the columns that take the package's domains, and the legacy
    --    append-only trigger (the package's has the same name).
    FOR r IN SELECT c.conname, pg_get_constraintdef(c.oid) AS def FROM pg_constraint c
              WHERE c.conrelid = v_outbox AND c.contype = 'c'
                AND c.conkey && (SELECT array_agg(a.attnum) FROM pg_attribute a
                                  WHERE a.attrelid = v_outbox AND a.attname IN ('event_domain', 'event_type', 'event_stream',
                                        'delivery_lane', 'event_severity', 'safe_payload')) LOOP
        PERFORM iu_core.fn_iu_adopt_record('public.event_outbox', 'constraint',
            format('ALTER TABLE public.event_outbox ADD CONSTRAINT %I %s', r.conname, r.def), '{}');
        EXECUTE format('ALTER TABLE public.event_outbox DROP CONSTRAINT %I', r.conname);
    END LOOP;
    FOR r IN SELECT t.tgname, pg_get_triggerdef(t.oid) AS def, t.tgfoid::regprocedure AS fn FROM pg_trigger t
              WHERE t.tgrelid = v_outbox AND NOT t.tgisinternal
                AND t.tgname IN ('trg_event_outbox_append_only', 'trg_event_outbox_no_truncate') LOOP
        PERFORM iu_core.fn_iu_adopt_record('public.event_outbox', 'trigger', r.def, jsonb_build_object('function', r.fn::text));
        EXECUTE format('DROP TRIGGER %I ON public.event_outbox', r.tgname);
        IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgfoid = r.fn::oid)
           AND (SELECT pronamespace FROM pg_proc WHERE oid = r.fn::oid) <> 'iu_core'::regnamespace
           AND NOT EXISTS (SELECT 1 FROM iu_core.iu_adoption WHERE kind = 'function' AND object = r.fn::text) THEN
            PERFORM iu_core.fn_iu_adopt_record(r.fn::text, 'function', pg_get_functiondef(r.fn), '{}');
            EXECUTE format('DROP FUNCTION %s', r.fn);
        END IF;
    END LOOP;

    -- 5. The package's column types (bare domains: no rewrite, the indexes keep their
    --    storage), and the txid: the constant 3 for every existing row, then the inserter's.
    --    A user's trigger with a WHEN condition on a column would refuse the type change: set
    --    aside and recreated as it was right after.
    SELECT coalesce(array_agg(pg_get_triggerdef(t.oid) ORDER BY t.tgname), '{}') INTO v_aside
      FROM pg_trigger t WHERE t.tgrelid = v_outbox AND NOT t.tgisinternal AND t.tgqual IS NOT NULL;
    FOR r IN SELECT t.tgname FROM pg_trigger t WHERE t.tgrelid = v_outbox AND NOT t.tgisinternal AND t.tgqual IS NOT NULL LOOP
        EXECUTE format('DROP TRIGGER %I ON public.event_outbox', r.tgname);
    END LOOP;
    PERFORM iu_core.fn_iu_adopt_record('public.event_outbox', 'columns',
        'ALTER TABLE public.event_outbox DROP COLUMN txid, ALTER COLUMN event_domain TYPE text, ALTER COLUMN event_type TYPE text, '
        || 'ALTER COLUMN event_stream TYPE text, ALTER COLUMN delivery_lane TYPE text, ALTER COLUMN event_severity TYPE text, '
        || 'ALTER COLUMN safe_payload TYPE jsonb', '{}');
    ALTER TABLE public.event_outbox
        ALTER COLUMN event_domain   TYPE public.iu_event_name,
        ALTER COLUMN event_type     TYPE public.iu_event_type,
        ALTER COLUMN event_stream   TYPE public.iu_event_name,
        ALTER COLUMN delivery_lane  TYPE public.iu_delivery_lane,
        ALTER COLUMN event_severity TYPE public.iu_event_severity,
        ALTER COLUMN safe_payload   TYPE public.iu_safe_payload,
        ADD COLUMN txid public.iu_txid NOT NULL DEFAULT '3';
    ALTER TABLE public.event_outbox ALTER COLUMN txid SET DEFAULT pg_current_xact_id();
    FOR v_n IN 1 .. cardinality(v_aside) LOOP
        EXECUTE v_aside[v_n];
    END LOOP;

    -- 6. The package's append-only guard (with its txid-rebase allowance, used just below)
    --    and its TRUNCATE guard.
    CREATE TRIGGER trg_event_outbox_append_only
        BEFORE UPDATE OR DELETE ON public.event_outbox
        FOR EACH ROW EXECUTE FUNCTION iu_core.fn_iu_event_outbox_append_only();
    CREATE TRIGGER trg_event_outbox_no_truncate
        BEFORE TRUNCATE ON public.event_outbox
        FOR EACH STATEMENT EXECUTE FUNCTION iu_core.fn_iu_event_outbox_append_only();

    -- 7. What each legacy worker never audited, re-stamped per set of workers that owe it.
    v_snap := pg_current_snapshot();
    IF v_cursor IS NOT NULL AND v_attempt IS NOT NULL THEN
        PERFORM set_config('iu.rebase_txid', 'on', true);
        FOR g IN
            WITH owed AS (
                SELECT e.id, array_agg(c.worker_name ORDER BY c.worker_name) AS workers
                  FROM public.iu_route_worker_cursor c
                  JOIN public.event_outbox e ON e.event_domain::text = c.event_domain
                 WHERE NOT EXISTS (SELECT 1 FROM public.iu_route_attempt a
                                    WHERE a.event_ref = e.id AND a.attempt_no = 1
                                      AND starts_with(a.idempotency_key, 'iu_wrk:' || c.worker_name || ':'))
                 GROUP BY e.id)
            SELECT o.workers, array_agg(o.id) AS ids FROM owed o GROUP BY o.workers ORDER BY o.workers
        LOOP
            v_group := v_group + 1;
            UPDATE public.event_outbox e SET txid = v_group::text::xid8 WHERE e.id = ANY (g.ids);
            GET DIAGNOSTICS v_n = ROW_COUNT;
            v_restamp := v_restamp + v_n;
            PERFORM iu_core.fn_iu_adopt_record('public.event_outbox', 'owed_events', NULL,
                jsonb_build_object('txid', v_group, 'workers', to_jsonb(g.workers), 'events', v_n));
        END LOOP;
        PERFORM set_config('iu.rebase_txid', 'off', true);
        FOR r IN SELECT c.worker_name,
                        coalesce((SELECT array_agg((a.detail->>'txid')::bigint ORDER BY (a.detail->>'txid')::bigint)
                                    FROM iu_core.iu_adoption a
                                   WHERE a.kind = 'owed_events' AND a.detail->'workers' ? c.worker_name), '{}') AS txids
                   FROM public.iu_route_worker_cursor c LOOP
            PERFORM iu_core.fn_iu_adopt_record(r.worker_name, 'position', NULL,
                jsonb_build_object('done_snapshot',
                    CASE WHEN cardinality(r.txids) = 0 THEN v_snap::text
                         ELSE format('%s:%s:%s', r.txids[1], pg_snapshot_xmax(v_snap),
                                     array_to_string(r.txids || ARRAY(SELECT x::text::bigint FROM pg_snapshot_xip(v_snap) x ORDER BY 1), ','))
                    END,
                    'owed_txids', to_jsonb(r.txids)));
        END LOOP;
    END IF;

    -- 8. Producers keep inserting, and keep emitting.
    FOR r IN SELECT DISTINCT a.grantee FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a
              WHERE c.oid = v_outbox AND a.privilege_type = 'INSERT' AND a.grantee <> c.relowner AND a.grantee <> 0
             UNION
             SELECT DISTINCT a.grantee FROM pg_attribute t CROSS JOIN LATERAL aclexplode(t.attacl) a
              WHERE t.attrelid = v_outbox AND a.privilege_type = 'INSERT' AND a.grantee <> 0
                AND a.grantee <> (SELECT relowner FROM pg_class WHERE oid = v_outbox) LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION iu_core.fn_iu_payload_is_clean(jsonb), iu_core.fn_iu_event_outbox_refuse_payload(jsonb), iu_core.fn_iu_event_outbox_package_only(text) TO %s',
                       r.grantee::regrole);
        IF v_emit IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_proc p CROSS JOIN LATERAL aclexplode(p.proacl) a
                                               WHERE p.oid = v_emit AND a.grantee = r.grantee AND a.privilege_type = 'EXECUTE') THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %s', v_emit, r.grantee::regrole);
            v_emit_added := v_emit_added || pg_get_userbyid(r.grantee)::text;
        END IF;
        v_grantees := v_grantees || r.grantee::regrole::text;
    END LOOP;
    IF cardinality(v_grantees) > 0 THEN
        PERFORM iu_core.fn_iu_adopt_record('public.event_outbox', 'producer_grants', NULL,
            jsonb_build_object('roles', to_jsonb(v_grantees), 'emit_added', to_jsonb(v_emit_added)));
    END IF;

    -- 9. The views, as they were.
    RETURN jsonb_build_object('lock_attempts', v_tries, 'views_detached', v_views,
                              'views_restored', iu_core.fn_iu_adopt_restore_views(),
                              'owed_events', v_restamp, 'producers', to_jsonb(v_grantees));
END;
$$;
