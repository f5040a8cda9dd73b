CREATE OR REPLACE FUNCTION public.fn_queue_heartbeat_pause(p_executor_id text, p_reason text, p_actor text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
DECLARE
    v_row public.queue_heartbeat;
BEGIN
    PERFORM iu_core.fn_iu_require_name('fn_queue_heartbeat_pause', 'p_executor_id', p_executor_id);
    IF p_reason IS NULL OR btrim(p_reason, E' \t\r\n\f\x0B') = '' THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_pause: p_reason required' USING ERRCODE = '22023',
            HINT = 'Say why, e.g. ''planned maintenance, ticket OPS-123'': v_queue_health shows it.';
    END IF;
    PERFORM iu_core.fn_iu_require_name('fn_queue_heartbeat_pause', 'p_reason', p_reason, 1000);
    SELECT * INTO v_row FROM public.queue_heartbeat WHERE executor_id = p_executor_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_pause: executor % is not registered', quote_literal(p_executor_id)
            USING ERRCODE = 'P0002', HINT = 'List executors: SELECT subject FROM v_queue_health WHERE source = ''heartbeat'';';
    END IF;
    IF v_row.paused_at IS NOT NULL THEN
        RETURN jsonb_build_object('executor_id', p_executor_id, 'paused', true, 'already_paused', true,
                                  'paused_at', v_row.paused_at, 'paused_reason', v_row.paused_reason,
                                  'paused_by', v_row.paused_by);
    END IF;
    UPDATE public.queue_heartbeat
       SET paused_at = now(), paused_reason = p_reason, paused_by = iu_core.fn_queue_actor(p_actor, 'fn_queue_heartbeat_pause'),
           paused_session_user = session_user
     WHERE executor_id = p_executor_id
    RETURNING * INTO v_row;
    RETURN jsonb_build_object('executor_id', p_executor_id, 'paused', true, 'already_paused', false,
                              'paused_at', v_row.paused_at, 'paused_reason', v_row.paused_reason,
                              'paused_by', v_row.paused_by, 'paused_session_user', v_row.paused_session_user);
END;
$$;
