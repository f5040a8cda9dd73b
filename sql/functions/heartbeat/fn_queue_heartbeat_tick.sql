CREATE OR REPLACE FUNCTION public.fn_queue_heartbeat_tick(
    p_executor_name text,
    p_executor_kind text,
    p_status        text  DEFAULT 'ok',
    p_metadata      jsonb DEFAULT '{}'::jsonb
)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
-- The permissive primitive: a generic UPSERT. An unknown executor is registered with the
-- documented defaults (cadence 60 s, threshold 180 s); a known one keeps its registered kind
-- and timings, and gets the beat, the status and the metadata. A protected executor is
-- refused (JSON, no write); a bound one is beaten only by its owning role's logins.
DECLARE
    v_row      public.queue_heartbeat;
    v_id       text;
    v_created  boolean;
    v_metadata jsonb := coalesce(p_metadata, '{}'::jsonb);
    v_actor    text;
    v_owner    text;
BEGIN
    PERFORM iu_core.fn_iu_require_name('fn_queue_heartbeat_tick', 'p_executor_name', p_executor_name);
    IF iu_core.fn_queue_heartbeat_is_protected(p_executor_name) THEN
        RETURN iu_core.fn_queue_heartbeat_refusal(p_executor_name);
    END IF;
    IF p_executor_kind IS NULL OR NOT p_executor_kind = ANY (iu_core.fn_queue_executor_kinds()) THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_tick: p_executor_kind % is not one of %',
            coalesce(quote_literal(left(p_executor_kind, 60)), 'NULL'), array_to_string(iu_core.fn_queue_executor_kinds(), ', ') USING ERRCODE = '22023';
    END IF;
    IF p_status IS NULL OR p_status NOT IN ('ok', 'warn', 'error') THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_tick: p_status % is not one of ok, warn, error',
            coalesce(quote_literal(left(p_status, 60)), 'NULL') USING ERRCODE = '22023';
    END IF;
    v_actor := iu_core.fn_queue_actor(NULL, 'fn_queue_heartbeat_tick');
    PERFORM iu_core.fn_iu_payload_require_clean('fn_queue_heartbeat_tick', 'p_metadata', v_metadata);

    INSERT INTO public.queue_heartbeat AS h (executor_id, executor_kind, status, last_beat_at, last_beat_payload,
                                      ticks_total, expected_cadence_seconds, stale_threshold_seconds,
                                      registered_by, last_beat_by, last_beat_session_user)
    SELECT p_executor_name, p_executor_kind, p_status, now(), v_metadata, 1,
           d.expected_cadence_seconds, d.stale_threshold_seconds, v_actor, v_actor, session_user
      FROM iu_core.fn_queue_heartbeat_defaults(p_executor_kind) d
    ON CONFLICT (executor_id) DO UPDATE
       SET status                 = EXCLUDED.status,
           last_beat_at           = EXCLUDED.last_beat_at,
           last_beat_payload      = EXCLUDED.last_beat_payload,
           last_beat_by           = EXCLUDED.last_beat_by,
           last_beat_session_user = EXCLUDED.last_beat_session_user,
           ticks_total            = h.ticks_total + 1
     WHERE iu_core.fn_queue_heartbeat_may_beat(h.owner_role)
    RETURNING h.executor_id, (h.xmax = 0) INTO v_id, v_created;
    IF v_id IS NULL THEN
        -- The row exists and is bound to a role this login is not a member of.
        SELECT h.owner_role INTO v_owner FROM public.queue_heartbeat h WHERE h.executor_id = p_executor_name;
        PERFORM iu_core.fn_queue_heartbeat_refuse_foreign('fn_queue_heartbeat_tick', p_executor_name, v_owner);
    END IF;
    SELECT * INTO v_row FROM public.queue_heartbeat WHERE executor_id = v_id;

    RETURN jsonb_build_object('executor_id', v_row.executor_id, 'executor_name', v_row.executor_id,
                              'ticked', true, 'created', v_created)
           || iu_core.fn_queue_heartbeat_describe(v_row);
END;
$$;
