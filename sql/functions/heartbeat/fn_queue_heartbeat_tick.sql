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
SET lock_timeout = '5s'
AS $$
-- The permissive primitive: a generic UPSERT. An unknown executor is registered with the
-- documented defaults (cadence 60 s, threshold 180 s), while fewer than
-- queue.heartbeat.self_registered_limit executors were created that way (P0002 past it: an
-- operator registers it); a known one keeps its registered kind and timings, and gets the
-- beat, the status and the metadata. An executor that only its own work may beat (the
-- protected set, route workers, runners) is refused (JSON, no write); a bound one is beaten
-- only by its owning role's logins.
DECLARE
    v_refusal jsonb;
    v_row      public.queue_heartbeat;
    v_id       text;
    v_created  boolean;
    v_metadata jsonb := coalesce(p_metadata, '{}'::jsonb);
    v_actor    text;
    v_owner    text;
BEGIN
    PERFORM iu_core.fn_iu_require_name('fn_queue_heartbeat_tick', 'p_executor_name', p_executor_name);
    v_refusal := iu_core.fn_queue_heartbeat_refusal(p_executor_name);
    IF v_refusal IS NOT NULL THEN
        RETURN v_refusal;
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

    -- A first beat creates the executor, within the bound of executors that executors
    -- create themselves (one statement calling this 2,000 times created 2,000 executors and
    -- 2,000 metric series). Two first beats racing may each pass the count: the bound is
    -- the limit plus the number of concurrent creators.
    IF NOT EXISTS (SELECT 1 FROM public.queue_heartbeat h WHERE h.executor_id = p_executor_name) THEN
        PERFORM iu_core.fn_queue_heartbeat_require_room('fn_queue_heartbeat_tick', p_executor_name);
    END IF;
    INSERT INTO public.queue_heartbeat AS h (executor_id, executor_kind, status, last_beat_at, last_beat_payload,
                                      ticks_total, expected_cadence_seconds, stale_threshold_seconds,
                                      registered_by, last_beat_by, last_beat_session_user, registered_via)
    SELECT p_executor_name, p_executor_kind, p_status, now(), v_metadata, 1,
           d.expected_cadence_seconds, d.stale_threshold_seconds, v_actor, v_actor, session_user, 'tick'
      FROM iu_core.fn_queue_heartbeat_defaults(p_executor_kind) d
    ON CONFLICT (executor_id) DO UPDATE
       SET status                 = EXCLUDED.status,
           last_beat_at           = EXCLUDED.last_beat_at,
           last_beat_payload      = EXCLUDED.last_beat_payload,
           last_beat_by           = EXCLUDED.last_beat_by,
           last_beat_session_user = EXCLUDED.last_beat_session_user,
           ticks_total            = h.ticks_total + 1
     WHERE iu_core.fn_queue_heartbeat_may_beat(h.owner_role) AND h.registered_via IN ('register', 'tick')
    RETURNING h.executor_id, (h.xmax = 0) INTO v_id, v_created;
    IF v_id IS NULL THEN
        -- A route worker or runner registered this id since the refusal was tested.
        v_refusal := iu_core.fn_queue_heartbeat_refusal(p_executor_name);
        IF v_refusal IS NOT NULL THEN
            RETURN v_refusal;
        END IF;
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
