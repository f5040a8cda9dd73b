CREATE OR REPLACE FUNCTION public.fn_queue_heartbeat_resume(p_executor_id text, p_actor text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
-- Resuming restarts the executor's clock (last_beat_at = now(), ticks_total unchanged), so
-- the maintenance window is not read as a silent gap. An alert still open from before the
-- pause is closed with it: the silence was superseded by the maintenance, and no
-- queue_worker_recovered is emitted for it (that would be a false heal: nothing beat). The
-- window memory (last alert per severity) is kept: resuming never makes an alert repeat.
DECLARE
    v_row         public.queue_heartbeat;
    v_had_alert   boolean;
BEGIN
    PERFORM iu_core.fn_iu_require_name('fn_queue_heartbeat_resume', 'p_executor_id', p_executor_id);
    SELECT * INTO v_row FROM public.queue_heartbeat WHERE executor_id = p_executor_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_resume: executor % is not registered', quote_literal(p_executor_id)
            USING ERRCODE = 'P0002', HINT = 'List executors: SELECT subject FROM v_queue_health WHERE source = ''heartbeat'';';
    END IF;
    IF v_row.paused_at IS NULL THEN
        RETURN jsonb_build_object('executor_id', p_executor_id, 'resumed', false, 'reason', 'not_paused');
    END IF;
    UPDATE public.queue_stale_alert a
       SET silent_since = NULL, alerted_at = NULL, alerted_severity = NULL, alerted_beat_at = NULL
     WHERE a.executor_id = p_executor_id AND a.alerted_at IS NOT NULL;
    v_had_alert := FOUND;
    UPDATE public.queue_heartbeat
       SET paused_at = NULL, paused_reason = NULL, paused_by = NULL, paused_session_user = NULL,
           last_beat_at = now(), last_beat_by = iu_core.fn_queue_actor(p_actor, 'fn_queue_heartbeat_resume'),
           last_beat_session_user = session_user
     WHERE executor_id = p_executor_id
    RETURNING * INTO v_row;
    RETURN jsonb_build_object('executor_id', p_executor_id, 'resumed', true,
                              'clock_restarted_at', v_row.last_beat_at,
                              'open_alert_closed', v_had_alert,
                              'resumed_by', v_row.last_beat_by,
                              'resumed_session_user', v_row.last_beat_session_user);
END;
$$;
