CREATE OR REPLACE FUNCTION public.fn_queue_heartbeat_register(
    p_executor_id              text,
    p_kind                     text,
    p_domain_scope             text[],
    p_expected_cadence_seconds integer,
    p_stale_threshold_seconds  integer,
    p_actor                    text DEFAULT NULL,
    p_owner_role               text DEFAULT NULL
)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
-- p_owner_role (optional, last so existing positional calls keep working): bind the
-- executor to a role; NULL or blank leaves it unbound. It is configuration like the
-- cadence: a re-registration stores what it is given (NULL unbinds).
DECLARE
    v_row     public.queue_heartbeat;
    v_id      text;
    v_created boolean;
    v_actor   text;
    v_owner   text;
    v_dom     text;
BEGIN
    v_actor := iu_core.fn_queue_actor(p_actor, 'fn_queue_heartbeat_register');
    PERFORM iu_core.fn_iu_require_name('fn_queue_heartbeat_register', 'p_executor_id', p_executor_id);
    IF p_kind IS NULL OR NOT p_kind = ANY (iu_core.fn_queue_executor_kinds()) THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_register: p_kind % is not one of %',
            coalesce(quote_literal(left(p_kind, 60)), 'NULL'), array_to_string(iu_core.fn_queue_executor_kinds(), ', ') USING ERRCODE = '22023';
    END IF;
    PERFORM iu_core.fn_iu_require_vector('fn_queue_heartbeat_register', 'p_domain_scope', p_domain_scope);
    IF p_domain_scope IS NULL OR array_position(p_domain_scope, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_register: p_domain_scope must be an array of non-empty domains (it may be empty: ''{}'')'
            USING ERRCODE = '22023';
    END IF;
    IF cardinality(p_domain_scope) > 100 THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_register: p_domain_scope has % domains, at most 100 allowed', cardinality(p_domain_scope)
            USING ERRCODE = '22023';
    END IF;
    FOREACH v_dom IN ARRAY p_domain_scope LOOP
        PERFORM iu_core.fn_iu_require_name('fn_queue_heartbeat_register', 'p_domain_scope element', v_dom);
    END LOOP;
    IF p_expected_cadence_seconds IS NULL OR p_expected_cadence_seconds <= 0 THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_register: p_expected_cadence_seconds must be > 0, got %',
            coalesce(p_expected_cadence_seconds::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF p_stale_threshold_seconds IS NULL OR p_stale_threshold_seconds <= 0 THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_register: p_stale_threshold_seconds must be > 0, got %',
            coalesce(p_stale_threshold_seconds::text, 'NULL') USING ERRCODE = '22023',
            HINT = 'A threshold of about three times the expected cadence tolerates two missed beats.';
    END IF;
    v_owner := nullif(btrim(p_owner_role, E' \t\r\n\f\x0B'), '');
    IF v_owner IS NOT NULL THEN
        PERFORM iu_core.fn_iu_require_name('fn_queue_heartbeat_register', 'p_owner_role', v_owner, 63);
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles r WHERE r.rolname = v_owner) THEN
            RAISE EXCEPTION 'fn_queue_heartbeat_register: p_owner_role % is not a role', quote_ident(v_owner)
                USING ERRCODE = '22023', HINT = 'Name an existing role (the executor''s login or a group of logins), exactly as in pg_roles.';
        END IF;
    END IF;

    -- Names cannot collide across what beats a row. A route worker's row is beaten by its run
    -- only: register tunes its cadence and threshold, never binds it (the binding would
    -- mean nothing: the run does not test it) nor changes its kind. A runner's row stays
    -- bound to a login (the binding is what keeps other logins off it): it may be re-bound,
    -- not unbound.
    IF EXISTS (SELECT 1 FROM public.iu_route_worker_cursor c WHERE c.worker_name = p_executor_id)
       OR EXISTS (SELECT 1 FROM public.queue_heartbeat h WHERE h.executor_id = p_executor_id AND h.registered_via = 'route_worker') THEN
        IF v_owner IS NOT NULL OR p_kind <> 'PG_worker' THEN
            RAISE EXCEPTION 'fn_queue_heartbeat_register: % is a route worker''s heartbeat: only its cadence and threshold may be registered (kind PG_worker, no owner role)',
                quote_literal(p_executor_id) USING ERRCODE = '22023',
                HINT = 'Only the worker''s own run beats it. Bind the executors an agent runs under names of their own.';
        END IF;
    END IF;
    IF v_owner IS NULL AND EXISTS (SELECT 1 FROM public.queue_heartbeat h WHERE h.executor_id = p_executor_id AND h.registered_via = 'runner') THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_register: % is a runner''s heartbeat: it stays bound to a login (p_owner_role required)',
            quote_literal(p_executor_id) USING ERRCODE = '22023',
            HINT = 'Pass the runner''s login (or a group of its logins) as p_owner_role.';
    END IF;

    -- Idempotent: a second registration with the same values changes nothing; different
    -- values update the executor's configuration (never its beat history).
    INSERT INTO public.queue_heartbeat AS h (executor_id, executor_kind, domain_scope, expected_cadence_seconds,
                                      stale_threshold_seconds, registered_by, last_beat_by, last_beat_session_user,
                                      owner_role)
    VALUES (p_executor_id, p_kind, p_domain_scope, p_expected_cadence_seconds, p_stale_threshold_seconds,
            v_actor, v_actor, session_user, v_owner)
    ON CONFLICT (executor_id) DO UPDATE
       SET executor_kind            = EXCLUDED.executor_kind,
           domain_scope             = EXCLUDED.domain_scope,
           expected_cadence_seconds = EXCLUDED.expected_cadence_seconds,
           stale_threshold_seconds  = EXCLUDED.stale_threshold_seconds,
           owner_role               = EXCLUDED.owner_role
     WHERE (h.executor_kind, h.domain_scope, h.expected_cadence_seconds, h.stale_threshold_seconds, h.owner_role)
           IS DISTINCT FROM (EXCLUDED.executor_kind, EXCLUDED.domain_scope, EXCLUDED.expected_cadence_seconds,
                             EXCLUDED.stale_threshold_seconds, EXCLUDED.owner_role)
    RETURNING h.executor_id, (h.xmax = 0) INTO v_id, v_created;

    SELECT * INTO v_row FROM public.queue_heartbeat WHERE executor_id = p_executor_id;
    IF v_id IS NULL THEN
        RETURN jsonb_build_object('executor_id', v_row.executor_id, 'registered', true, 'created', false,
                                  'changed', false) || iu_core.fn_queue_heartbeat_describe(v_row);
    END IF;
    RETURN jsonb_build_object('executor_id', v_row.executor_id, 'registered', true, 'created', v_created,
                              'changed', NOT v_created) || iu_core.fn_queue_heartbeat_describe(v_row);
END;
$$;
