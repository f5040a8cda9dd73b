CREATE OR REPLACE FUNCTION iu_core.fn_iu_adopt_heartbeat()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_adopt_heartbeat(): the first generation's queue_heartbeat (the cut pipeline's,
    -- after its migration 052) becomes the package's, in place: every row a registered
    -- executor with its history. The cut seed's names are the spec's other names for the
    -- same columns: executor_name -> executor_id, last_tick_at -> last_beat_at, metadata ->
    -- last_beat_payload, created_at -> registered_at (renamed; ticks_total, status and kind
    -- as they are). Each row gets the default cadence and stale threshold of its kind
    -- (iu_core.fn_queue_heartbeat_defaults: a PG_worker 60 s / 300 s, others 60 s / 180 s), an
    -- empty domain scope, and the package's audit columns. The package's rules on the row
    -- hold for new beats; legacy payloads are not re-checked. A legacy executor silent
    -- longer than its new threshold is stale at once: the first stale-check alerts it, which
    -- is right (the install plan says so). Internal.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_t regclass := 'public.queue_heartbeat'::regclass;
    r   record;
BEGIN
    PERFORM iu_core.fn_iu_adopt_lock(ARRAY[v_t]);
    PERFORM iu_core.fn_iu_adopt_table('public.queue_heartbeat');
    FOR r IN SELECT * FROM (VALUES ('executor_name', 'executor_id'), ('last_tick_at', 'last_beat_at'),
                                   ('metadata', 'last_beat_payload'), ('created_at', 'registered_at')) v(old, new) LOOP
        IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = v_t AND attname = r.old AND NOT attisdropped)
           AND NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = v_t AND attname = r.new AND NOT attisdropped) THEN
            EXECUTE format('ALTER TABLE public.queue_heartbeat RENAME COLUMN %I TO %I', r.old, r.new);
            PERFORM iu_core.fn_iu_adopt_record('public.queue_heartbeat', 'rename',
                format('ALTER TABLE public.queue_heartbeat RENAME COLUMN %I TO %I', r.new, r.old), '{}');
        END IF;
    END LOOP;
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'domain_scope', 'text[] NOT NULL DEFAULT ''{}''');
    IF iu_core.fn_iu_adopt_add_column(v_t, 'expected_cadence_seconds', 'integer NOT NULL DEFAULT 60') THEN
        PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'stale_threshold_seconds', 'integer NOT NULL DEFAULT 180');
        UPDATE public.queue_heartbeat h
           SET (expected_cadence_seconds, stale_threshold_seconds) =
               (SELECT d.expected_cadence_seconds, d.stale_threshold_seconds
                  FROM iu_core.fn_queue_heartbeat_defaults(h.executor_kind) d);
        ALTER TABLE public.queue_heartbeat ALTER COLUMN expected_cadence_seconds DROP DEFAULT,
                                           ALTER COLUMN stale_threshold_seconds DROP DEFAULT;
    END IF;
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'registered_at', 'timestamptz NOT NULL DEFAULT now()');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'registered_by', 'text NOT NULL DEFAULT current_user');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'registered_session_user', 'text NOT NULL DEFAULT session_user');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'paused_at', 'timestamptz');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'paused_reason', 'text');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'paused_by', 'text');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'paused_session_user', 'text');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'last_beat_by', 'text');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'last_beat_session_user', 'text');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'owner_role', 'text');
    PERFORM iu_core.fn_iu_adopt_add_check(v_t, 'queue_heartbeat_executor_id_check', $c$executor_id <> ''$c$);
    PERFORM iu_core.fn_iu_adopt_add_check(v_t, 'queue_heartbeat_expected_cadence_seconds_check', 'expected_cadence_seconds > 0');
    PERFORM iu_core.fn_iu_adopt_add_check(v_t, 'queue_heartbeat_stale_threshold_seconds_check', 'stale_threshold_seconds > 0');
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = v_t AND contype = 'c' AND pg_get_constraintdef(oid) LIKE '%executor_kind%') THEN
        PERFORM iu_core.fn_iu_adopt_add_check(v_t, 'queue_heartbeat_executor_kind_check', 'executor_kind = ANY (iu_core.fn_queue_executor_kinds())');
    END IF;
    PERFORM iu_core.fn_iu_adopt_add_check(v_t, 'queue_heartbeat_payload_object', $c$jsonb_typeof(last_beat_payload) = 'object'$c$, false);
    PERFORM iu_core.fn_iu_adopt_add_check(v_t, 'queue_heartbeat_payload_hygiene', 'iu_core.fn_iu_payload_is_clean(last_beat_payload)', false);

    -- The hc executor's beat (dot_config hc_executor_last_run, updated each tick) becomes a
    -- heartbeat row, beaten by that key from now on: its writer keeps working unchanged.
    IF to_regclass('public.dot_config') IS NOT NULL
       AND EXISTS (SELECT 1 FROM public.dot_config WHERE key = 'hc_executor_last_run')
       AND NOT EXISTS (SELECT 1 FROM public.queue_heartbeat WHERE executor_id = 'hc_executor') THEN
        INSERT INTO public.queue_heartbeat (executor_id, executor_kind, status, last_beat_at, ticks_total, last_beat_payload,
                                            expected_cadence_seconds, stale_threshold_seconds)
        SELECT 'hc_executor', 'DOT', 'ok', iu_core.fn_dot_config_hc_beat_at(c.value, c.updated_at), 1,
               jsonb_build_object('source', 'dot_config.hc_executor_last_run'), d.expected_cadence_seconds, d.stale_threshold_seconds
          FROM public.dot_config c, iu_core.fn_queue_heartbeat_defaults('DOT') d
         WHERE c.key = 'hc_executor_last_run';
        CREATE TRIGGER trg_dot_config_hc_beat
            AFTER INSERT OR UPDATE ON public.dot_config
            FOR EACH ROW WHEN (NEW.key = 'hc_executor_last_run')
            EXECUTE FUNCTION iu_core.fn_dot_config_hc_beat();
        PERFORM iu_core.fn_iu_adopt_record('public.queue_heartbeat', 'hc_executor',
            'DROP TRIGGER trg_dot_config_hc_beat ON public.dot_config', '{}');
    END IF;
END;
$$;
