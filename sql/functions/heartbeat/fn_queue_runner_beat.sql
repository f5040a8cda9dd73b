CREATE OR REPLACE FUNCTION public.fn_queue_runner_beat(
    p_executor_id text,
    p_instance    uuid,
    p_status      text    DEFAULT 'ok',
    p_metadata    jsonb   DEFAULT '{}'::jsonb,
    p_release     boolean DEFAULT false
)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
-- A runner's own heartbeat (iu-runner run and tick --executor-id). Only the runner beats
-- its row: the row is created here bound to the runner's login (owner_role: session_user),
-- fn_queue_heartbeat_tick, _write and fn_cut_heartbeat_ping refuse it
-- (beaten_by_its_runner), and of the processes of that login only the one holding it may
-- beat it: p_instance, one uuid per runner process, is a lease renewed by every beat and
-- handed back by p_release (a runner that stops, a tick's one beat). Another process of
-- the same id gets {"beat": false, "held": true, "held_by": {...}} while the holder's last
-- beat is younger than iu_core.fn_queue_runner_lease_seconds() (30 s) and not stamped ahead
-- of the clock (fn_queue_heartbeat_is_ahead: a dead holder's stamp from before the server's
-- clock stepped back holds nothing), and takes the row over after that ("took_over": true): two live runners never share a row (the second one
-- is the first one's standby), and a restarted runner never leaves a row behind that goes
-- stale. A first beat creates the row within queue.heartbeat.self_registered_limit. Not
-- a runner's row (a route worker's name, a row created by a first tick, an unbound row an
-- operator registered: any executor may beat those) or bound to another login: refused. An
-- operator may register the id first, bound to the runner's login (p_owner_role).
DECLARE
    v_row      public.queue_heartbeat;
    v_metadata jsonb := coalesce(p_metadata, '{}'::jsonb);
    v_actor    text;
    v_created  boolean := false;
    v_prev     uuid;
BEGIN
    PERFORM iu_core.fn_iu_require_name('fn_queue_runner_beat', 'p_executor_id', p_executor_id);
    IF p_instance IS NULL THEN
        RAISE EXCEPTION 'fn_queue_runner_beat: p_instance required' USING ERRCODE = '22023',
            HINT = 'One uuid per runner process, the same on every beat of that process (iu-runner draws one at start).';
    END IF;
    IF p_status IS NULL OR p_status NOT IN ('ok', 'warn', 'error') THEN
        RAISE EXCEPTION 'fn_queue_runner_beat: p_status % is not one of ok, warn, error',
            coalesce(quote_literal(left(p_status, 60)), 'NULL') USING ERRCODE = '22023';
    END IF;
    PERFORM iu_core.fn_iu_payload_require_clean('fn_queue_runner_beat', 'p_metadata', v_metadata);
    v_actor := iu_core.fn_queue_actor(NULL, 'fn_queue_runner_beat');
    IF iu_core.fn_queue_heartbeat_is_protected(p_executor_id)
       OR EXISTS (SELECT 1 FROM public.iu_route_worker_cursor c WHERE c.worker_name = p_executor_id) THEN
        RAISE EXCEPTION 'fn_queue_runner_beat: % is a route worker''s (or a protected) executor, never a runner''s',
            quote_literal(p_executor_id) USING ERRCODE = '22023',
            HINT = 'Give the runner an id of its own (iu-runner --executor-id; the default is iu-runner:<host>).';
    END IF;

    SELECT * INTO v_row FROM public.queue_heartbeat h WHERE h.executor_id = p_executor_id FOR UPDATE;
    IF NOT FOUND THEN
        PERFORM iu_core.fn_queue_heartbeat_require_room('fn_queue_runner_beat', p_executor_id);
        INSERT INTO public.queue_heartbeat AS h (executor_id, executor_kind, status, last_beat_at, last_beat_payload,
                                                 ticks_total, expected_cadence_seconds, stale_threshold_seconds,
                                                 registered_by, last_beat_by, last_beat_session_user, owner_role,
                                                 registered_via, runner_instance)
        SELECT p_executor_id, 'external_worker', p_status, now(), v_metadata, 1,
               d.expected_cadence_seconds, d.stale_threshold_seconds, v_actor, v_actor, session_user, session_user,
               'runner', CASE WHEN p_release THEN NULL ELSE p_instance END
          FROM iu_core.fn_queue_heartbeat_defaults('external_worker') d
        ON CONFLICT (executor_id) DO NOTHING
        RETURNING * INTO v_row;
        IF FOUND THEN
            RETURN jsonb_build_object('executor_id', v_row.executor_id, 'beat', true, 'held', false, 'created', true,
                                      'took_over', false, 'released', p_release, 'owner_role', v_row.owner_role,
                                      'registered_via', v_row.registered_via, 'last_beat_at', v_row.last_beat_at);
        END IF;
        -- Another runner created it a moment ago: decide on the row as it is now.
        SELECT * INTO v_row FROM public.queue_heartbeat h WHERE h.executor_id = p_executor_id FOR UPDATE;
    END IF;

    IF v_row.registered_via = 'tick' OR v_row.registered_via = 'route_worker'
       OR (v_row.registered_via = 'register' AND v_row.owner_role IS NULL) THEN
        RAISE EXCEPTION 'fn_queue_runner_beat: executor % is not a runner''s: it was created by %', quote_literal(p_executor_id),
            CASE v_row.registered_via WHEN 'tick' THEN 'a first fn_queue_heartbeat_tick (any executor may beat it)'
                                      WHEN 'register' THEN 'an operator, unbound (any executor may beat it)'
                                      ELSE 'a route worker' END
            USING ERRCODE = '42501',
                  HINT = 'Give the runner an id of its own (iu-runner --executor-id), or an operator binds this one to the runner''s login: fn_queue_heartbeat_register(..., p_owner_role => ''<login>'').';
    END IF;
    IF NOT iu_core.fn_queue_heartbeat_may_beat(v_row.owner_role) THEN
        PERFORM iu_core.fn_queue_heartbeat_refuse_foreign('fn_queue_runner_beat', p_executor_id, v_row.owner_role);
    END IF;
    v_prev := v_row.runner_instance;
    IF v_prev IS NOT NULL AND v_prev <> p_instance
       AND v_row.last_beat_at > now() - make_interval(secs => iu_core.fn_queue_runner_lease_seconds())
       AND NOT iu_core.fn_queue_heartbeat_is_ahead(v_row.last_beat_at, now()) THEN
        RETURN jsonb_build_object(
            'executor_id', p_executor_id, 'beat', false, 'held', true,
            'held_by', jsonb_build_object(
                'instance', v_prev,
                'session_user', v_row.last_beat_session_user,
                'last_beat_at', v_row.last_beat_at,
                'pid', v_row.last_beat_payload -> 'pid',
                'host', v_row.last_beat_payload -> 'host',
                'free_at', v_row.last_beat_at + make_interval(secs => iu_core.fn_queue_runner_lease_seconds())));
    END IF;
    UPDATE public.queue_heartbeat h
       SET status                 = p_status,
           last_beat_at           = now(),
           last_beat_payload      = v_metadata,
           last_beat_by           = v_actor,
           last_beat_session_user = session_user,
           ticks_total            = h.ticks_total + 1,
           registered_via         = 'runner',
           runner_instance        = CASE WHEN p_release THEN NULL ELSE p_instance END
     WHERE h.executor_id = p_executor_id
    RETURNING * INTO v_row;
    RETURN jsonb_build_object('executor_id', v_row.executor_id, 'beat', true, 'held', false, 'created', false,
                              'took_over', v_prev IS NOT NULL AND v_prev <> p_instance, 'released', p_release,
                              'owner_role', v_row.owner_role, 'registered_via', v_row.registered_via,
                              'last_beat_at', v_row.last_beat_at);
END;
$$;
