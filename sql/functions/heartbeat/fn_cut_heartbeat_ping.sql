CREATE OR REPLACE FUNCTION public.fn_cut_heartbeat_ping(
    p_executor_name text,
    p_executor_kind text  DEFAULT 'external_worker',
    p_status        text  DEFAULT 'ok',
    p_metadata      jsonb DEFAULT '{}'::jsonb
)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
DECLARE
    v_refusal jsonb;
    v_metadata jsonb := coalesce(p_metadata, '{}'::jsonb);
BEGIN
    IF p_executor_name IS NULL OR btrim(p_executor_name, E' \t\r\n\f\x0B') = '' THEN
        RAISE EXCEPTION 'fn_cut_heartbeat_ping: p_executor_name required' USING ERRCODE = '22023',
            HINT = 'Name the executor, e.g. cut_pipeline_operator_<scope>, so one stale row cannot silence another.';
    END IF;
    PERFORM iu_core.fn_iu_require_name('fn_cut_heartbeat_ping', 'p_executor_name', p_executor_name);
    -- The same refusal fn_queue_heartbeat_tick and fn_queue_heartbeat_write return: only a
    -- worker heals itself (the legacy protected set, route workers, runners).
    v_refusal := iu_core.fn_queue_heartbeat_refusal(p_executor_name);
    IF v_refusal IS NOT NULL THEN
        RETURN v_refusal;
    END IF;
    IF p_executor_kind IS NULL OR NOT p_executor_kind = ANY (iu_core.fn_queue_executor_kinds()) THEN
        RAISE EXCEPTION 'fn_cut_heartbeat_ping: p_executor_kind % not in 7-vocab (%)',
            coalesce(quote_literal(left(p_executor_kind, 60)), 'NULL'), array_to_string(iu_core.fn_queue_executor_kinds(), ', ') USING ERRCODE = '22023';
    END IF;
    IF p_status IS NULL OR p_status NOT IN ('ok', 'warn', 'error') THEN
        RAISE EXCEPTION 'fn_cut_heartbeat_ping: p_status % not in {ok,warn,error}',
            coalesce(quote_literal(left(p_status, 60)), 'NULL') USING ERRCODE = '22023';
    END IF;
    IF NOT coalesce((SELECT c.value = 'true' FROM public.dot_config c WHERE c.key = 'queue.heartbeat.enabled'), false) THEN
        RETURN jsonb_build_object('skipped', true);
    END IF;
    PERFORM iu_core.fn_iu_payload_require_clean('fn_cut_heartbeat_ping', 'p_metadata', v_metadata);

    RETURN public.fn_queue_heartbeat_tick(
        p_executor_name, p_executor_kind, p_status,
        v_metadata || jsonb_build_object(
            'ping_origin',   'cut_pipeline_caller',
            'ping_function', 'fn_cut_heartbeat_ping',
            'ping_actor',    coalesce(nullif(current_setting('app.actor', true), ''), 'cut_pipeline_operator_external'),
            'ping_at',       now()));
END;
$$;
