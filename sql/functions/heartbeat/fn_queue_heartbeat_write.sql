CREATE OR REPLACE FUNCTION public.fn_queue_heartbeat_write(p_executor_id text, p_payload jsonb DEFAULT '{}'::jsonb, p_actor text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
DECLARE
    v_refusal jsonb;
    v_row     public.queue_heartbeat;
    v_payload jsonb := coalesce(p_payload, '{}'::jsonb);
    v_actor   text;
    v_owner   text;
BEGIN
    PERFORM iu_core.fn_iu_require_name('fn_queue_heartbeat_write', 'p_executor_id', p_executor_id);
    v_refusal := iu_core.fn_queue_heartbeat_refusal(p_executor_id);
    IF v_refusal IS NOT NULL THEN
        RETURN v_refusal;
    END IF;
    v_actor := iu_core.fn_queue_actor(p_actor, 'fn_queue_heartbeat_write');
    PERFORM iu_core.fn_iu_payload_require_clean('fn_queue_heartbeat_write', 'p_payload', v_payload);

    -- The binding is tested in the UPDATE itself, on the row version it changes, so a
    -- concurrent re-registration cannot slip a beat past it.
    UPDATE public.queue_heartbeat h
       SET last_beat_at           = now(),
           last_beat_payload      = v_payload,
           last_beat_by           = v_actor,
           last_beat_session_user = session_user,
           ticks_total            = h.ticks_total + 1
     WHERE h.executor_id = p_executor_id
       AND iu_core.fn_queue_heartbeat_may_beat(h.owner_role)
       AND h.registered_via IN ('register', 'tick')
    RETURNING * INTO v_row;
    IF NOT FOUND THEN
        v_refusal := iu_core.fn_queue_heartbeat_refusal(p_executor_id);
        IF v_refusal IS NOT NULL THEN
            RETURN v_refusal;
        END IF;
        SELECT h.owner_role INTO v_owner FROM public.queue_heartbeat h WHERE h.executor_id = p_executor_id;
        IF FOUND THEN
            PERFORM iu_core.fn_queue_heartbeat_refuse_foreign('fn_queue_heartbeat_write', p_executor_id, v_owner);
        END IF;
        RAISE EXCEPTION 'fn_queue_heartbeat_write: executor % is not registered', quote_literal(p_executor_id)
            USING ERRCODE = 'P0002',
                  HINT = format('An operator registers it once: SELECT fn_queue_heartbeat_register(%L, ''external_worker'', ''{}'', 60, 180, ''me'');', p_executor_id);
    END IF;
    RETURN jsonb_build_object('executor_id', v_row.executor_id, 'beat', true) || iu_core.fn_queue_heartbeat_describe(v_row);
END;
$$;
