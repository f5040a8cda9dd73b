CREATE OR REPLACE FUNCTION iu_core.fn_iu_emit_event_refuse(
    p_caller              text,
    p_names               text[],
    p_event_domain        text,
    p_event_type          text,
    p_event_stream        text,
    p_delivery_lane       text,
    p_event_severity      text,
    p_event_subject_table text,
    p_event_subject_ref   text,
    p_safe_payload        jsonb
)
RETURNS void
LANGUAGE plpgsql
AS $$
    -- The argument rules of one event, one after the other, each refusal in its caller's
    -- name: raises on the first one broken, returns when all hold. p_caller: the function
    -- the messages name (fn_iu_emit_event, fn_iu_emit_events); p_names: the names of the
    -- eight arguments as that function's caller wrote them, in this function's order
    -- (fn_iu_emit_event: p_event_domain, ...; fn_iu_emit_events: p_event_domain,
    -- p_event_type, p_event_streams[3], ...). Called by both only when their INSERT wrote
    -- less than asked (their one-expression tests flagged an argument, or the type is
    -- unregistered: then this returns and the caller says so). Touches nothing. Runs
    -- inside the callers' rights and pinned search_path (pg_catalog, pg_temp) and names the
    -- package's functions by their schema.
BEGIN
    PERFORM iu_core.fn_iu_require_name(p_caller, p_names[1], p_event_domain);
    PERFORM iu_core.fn_iu_require_name(p_caller, p_names[2], p_event_type);
    PERFORM iu_core.fn_iu_require_name(p_caller, p_names[3], p_event_stream);
    -- Optional subject: blank is the same as none (stored as NULL); when given, bounded
    -- like a name.
    IF NOT iu_core.fn_iu_is_blank(p_event_subject_table) THEN
        PERFORM iu_core.fn_iu_require_name(p_caller, p_names[6], p_event_subject_table);
    END IF;
    IF NOT iu_core.fn_iu_is_blank(p_event_subject_ref) THEN
        PERFORM iu_core.fn_iu_require_name(p_caller, p_names[7], p_event_subject_ref, 1000);
    END IF;
    -- The stale-check's alerts are the package's own voice: a caller who could emit a
    -- "silent" or "recovered" for another executor could page people falsely or, worse,
    -- make a real silence look handled. fn_queue_stale_check writes them itself. The two
    -- type names are reserved in every domain, as the outbox's own rule has them (the
    -- domain iu_event_type); the callers run as the package, which that rule lets through.
    IF p_event_type IN ('queue_worker_silent', 'queue_worker_recovered') THEN
        RAISE EXCEPTION '%: %/% events are written only by the package (fn_queue_stale_check)',
            p_caller, p_event_domain, p_event_type
            USING ERRCODE = '42501',
                  HINT = 'queue_worker_silent and queue_worker_recovered are reserved event types in every domain; register and emit your own type (executor silence is reported by fn_queue_stale_check).';
    END IF;
    IF p_delivery_lane IS NULL OR p_delivery_lane NOT IN ('immediate', 'standard', 'batch') THEN
        RAISE EXCEPTION '%: % % is not one of immediate, standard, batch',
            p_caller, p_names[4], coalesce(quote_literal(p_delivery_lane), 'NULL') USING ERRCODE = '22023';
    END IF;
    IF p_event_severity IS NULL OR p_event_severity NOT IN ('debug', 'info', 'warning', 'critical') THEN
        RAISE EXCEPTION '%: % % is not one of debug, info, warning, critical',
            p_caller, p_names[5], coalesce(quote_literal(p_event_severity), 'NULL') USING ERRCODE = '22023';
    END IF;
    PERFORM iu_core.fn_iu_payload_require_clean(p_caller, p_names[8], p_safe_payload);
END;
$$;
