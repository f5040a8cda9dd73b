CREATE OR REPLACE FUNCTION public.fn_iu_route_worker_register(p_worker_name text, p_event_domain text DEFAULT 'iu')
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_register(p_worker_name, p_event_domain DEFAULT 'iu') -> jsonb
    -- Creates the worker's cursor at the start of the stream and its PG_worker heartbeat row,
    -- so a worker that stops running is noticed. Idempotent: a re-register keeps the cursor and
    -- the heartbeat's history (ticks, last beat, pause). A worker consumes one domain.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_sysid   bigint;
    v_actor   text;
    v_created integer;
    v_hb      integer;
    c         public.iu_route_worker_cursor%ROWTYPE;
BEGIN
    v_sysid := (SELECT s.system_identifier FROM pg_control_system() s);
    v_actor := iu_core.fn_queue_actor(NULL, 'fn_iu_route_worker_register');
    PERFORM iu_core.fn_iu_route_worker_require_name('fn_iu_route_worker_register', p_worker_name);
    PERFORM iu_core.fn_iu_require_name('fn_iu_route_worker_register', 'p_event_domain', p_event_domain);

    -- A route worker's heartbeat is beaten by its run, whatever binds it: its name must not
    -- be an executor's already (a bound agent, a runner, anything a first tick created), or
    -- every executor could beat that row by running the worker. A PG_worker row registered
    -- by an operator, unbound, is taken as the worker's (its cadence and threshold kept).
    IF NOT EXISTS (SELECT 1 FROM public.iu_route_worker_cursor cur WHERE cur.worker_name = p_worker_name)
       AND EXISTS (SELECT 1 FROM public.queue_heartbeat h
                    WHERE h.executor_id = p_worker_name
                      AND NOT (h.registered_via IN ('register', 'route_worker') AND h.executor_kind = 'PG_worker'
                               AND h.owner_role IS NULL)) THEN
        RAISE EXCEPTION 'fn_iu_route_worker_register: % is already an executor''s name (%): a route worker''s run beats its own heartbeat row, so the names may not collide',
            quote_literal(p_worker_name),
            (SELECT format('kind %s, created by %s%s', h.executor_kind, h.registered_via,
                           coalesce(', bound to ' || quote_ident(h.owner_role), ''))
               FROM public.queue_heartbeat h WHERE h.executor_id = p_worker_name)
            USING ERRCODE = '22023', HINT = 'Register the worker under another name.';
    END IF;

    -- A group's name is the worker name its attempts carry; a member is registered (and
    -- run) as a member of its group: neither may become a plain worker.
    IF EXISTS (SELECT 1 FROM public.iu_route_group gr WHERE gr.group_name = p_worker_name)
       OR EXISTS (SELECT 1 FROM public.iu_route_worker_cursor cur WHERE cur.worker_name = p_worker_name AND cur.group_name IS NOT NULL) THEN
        RAISE EXCEPTION 'fn_iu_route_worker_register: % is %', quote_literal(p_worker_name),
            coalesce((SELECT format('a member of group %L', cur.group_name) FROM public.iu_route_worker_cursor cur
                       WHERE cur.worker_name = p_worker_name AND cur.group_name IS NOT NULL),
                     'a group''s name (the worker name its members'' attempts carry)')
            USING ERRCODE = '22023',
                  HINT = 'Members are added with fn_iu_route_worker_register_member(<group>, <member>); a plain worker needs a name of its own.';
    END IF;

    INSERT INTO public.iu_route_worker_cursor (worker_name, event_domain, system_identifier, registered_by)
    VALUES (p_worker_name, p_event_domain, v_sysid, v_actor)
    ON CONFLICT (worker_name) DO NOTHING;
    GET DIAGNOSTICS v_created = ROW_COUNT;

    SELECT * INTO c FROM public.iu_route_worker_cursor WHERE worker_name = p_worker_name;
    IF c.event_domain <> p_event_domain THEN
        RAISE EXCEPTION 'fn_iu_route_worker_register: worker % is already registered for domain %',
            quote_literal(p_worker_name), quote_literal(c.event_domain)
            USING ERRCODE = '22023',
                  HINT = 'A worker consumes one domain; register another worker name for another domain.';
    END IF;

    INSERT INTO public.queue_heartbeat (executor_id, executor_kind, domain_scope, expected_cadence_seconds,
                                 stale_threshold_seconds, registered_by, last_beat_payload, registered_via)
    SELECT p_worker_name, 'PG_worker', ARRAY[p_event_domain], d.expected_cadence_seconds,
           d.stale_threshold_seconds, v_actor, jsonb_build_object('registered', true), 'route_worker'
      FROM iu_core.fn_queue_heartbeat_defaults('PG_worker') d
    ON CONFLICT (executor_id) DO NOTHING;
    GET DIAGNOSTICS v_hb = ROW_COUNT;
    -- An operator's unbound PG_worker row of that name (see above) becomes the worker's.
    UPDATE public.queue_heartbeat h SET registered_via = 'route_worker'
     WHERE h.executor_id = p_worker_name AND h.registered_via <> 'route_worker';

    RETURN jsonb_build_object(
        'worker', p_worker_name,
        'event_domain', c.event_domain,
        'registered', true,
        'created', v_created > 0,
        'cursor', CASE WHEN c.done_snapshot IS NULL AND c.window_snapshot IS NULL THEN 'start_of_stream' ELSE 'kept' END,
        'system_identifier', c.system_identifier::text,
        'heartbeat_created', v_hb > 0,
        'heartbeat', (SELECT jsonb_build_object('executor_id', h.executor_id, 'executor_kind', h.executor_kind,
                                                'expected_cadence_seconds', h.expected_cadence_seconds,
                                                'stale_threshold_seconds', h.stale_threshold_seconds)
                        FROM public.queue_heartbeat h WHERE h.executor_id = p_worker_name));
END;
$$;
