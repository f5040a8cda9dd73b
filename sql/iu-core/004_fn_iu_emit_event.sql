-- 004_fn_iu_emit_event.sql
--
-- Adds fn_iu_emit_event, the one sanctioned writer of event_outbox. It validates every
-- argument up front so a caller gets a clear, function-prefixed error with the right
-- SQLSTATE instead of a bare constraint violation. It refuses the two alert types the
-- stale-check owns (system/queue_worker_silent and system/queue_worker_recovered).

-- +goose Up

-- +goose StatementBegin
CREATE FUNCTION fn_iu_emit_event(
    p_event_domain        text,
    p_event_type          text,
    p_event_stream        text,
    p_delivery_lane       text  DEFAULT 'standard',
    p_event_severity      text  DEFAULT 'info',
    p_event_subject_table text  DEFAULT NULL,
    p_event_subject_ref   text  DEFAULT NULL,
    p_safe_payload        jsonb DEFAULT '{}'::jsonb
)
RETURNS uuid
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_id uuid;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_iu_emit_event');
    PERFORM fn_iu_require_name('fn_iu_emit_event', 'p_event_domain', p_event_domain);
    PERFORM fn_iu_require_name('fn_iu_emit_event', 'p_event_type', p_event_type);
    PERFORM fn_iu_require_name('fn_iu_emit_event', 'p_event_stream', p_event_stream);
    -- Optional subject: blank is the same as none (stored as NULL); when given, bounded
    -- like a name.
    IF btrim(p_event_subject_table, E' \t\r\n\f\x0B') = '' THEN
        p_event_subject_table := NULL;
    ELSIF p_event_subject_table IS NOT NULL THEN
        PERFORM fn_iu_require_name('fn_iu_emit_event', 'p_event_subject_table', p_event_subject_table);
    END IF;
    IF btrim(p_event_subject_ref, E' \t\r\n\f\x0B') = '' THEN
        p_event_subject_ref := NULL;
    ELSIF p_event_subject_ref IS NOT NULL THEN
        PERFORM fn_iu_require_name('fn_iu_emit_event', 'p_event_subject_ref', p_event_subject_ref, 1000);
    END IF;
    -- The stale-check's alerts are the package's own voice: a caller who could emit a
    -- "silent" or "recovered" for another executor could page people falsely or, worse,
    -- make a real silence look handled. fn_queue_stale_check writes them itself.
    IF p_event_domain = 'system' AND p_event_type IN ('queue_worker_silent', 'queue_worker_recovered') THEN
        RAISE EXCEPTION 'fn_iu_emit_event: %/% events are written only by the package (fn_queue_stale_check)',
            p_event_domain, p_event_type
            USING ERRCODE = '42501',
                  HINT = 'Register and emit your own event type; executor silence is reported by fn_queue_stale_check.';
    END IF;
    IF p_delivery_lane IS NULL OR p_delivery_lane NOT IN ('immediate', 'standard', 'batch') THEN
        RAISE EXCEPTION 'fn_iu_emit_event: p_delivery_lane % is not one of immediate, standard, batch',
            coalesce(quote_literal(p_delivery_lane), 'NULL') USING ERRCODE = '22023';
    END IF;
    IF p_event_severity IS NULL OR p_event_severity NOT IN ('debug', 'info', 'warning', 'critical') THEN
        RAISE EXCEPTION 'fn_iu_emit_event: p_event_severity % is not one of debug, info, warning, critical',
            coalesce(quote_literal(p_event_severity), 'NULL') USING ERRCODE = '22023';
    END IF;
    PERFORM fn_iu_payload_require_clean('fn_iu_emit_event', 'p_safe_payload', p_safe_payload);
    IF NOT EXISTS (SELECT 1 FROM event_type_registry r
                    WHERE r.event_domain = p_event_domain AND r.event_type = p_event_type) THEN
        RAISE EXCEPTION 'fn_iu_emit_event: event type %/% is not registered', p_event_domain, p_event_type
            USING ERRCODE = '22023',
                  HINT = format('Register it first: INSERT INTO event_type_registry (event_domain, event_type, description) VALUES (%L, %L, ''...'');',
                                p_event_domain, p_event_type);
    END IF;

    INSERT INTO event_outbox (event_domain, event_type, event_stream, delivery_lane, event_severity,
                              event_subject_table, event_subject_ref, safe_payload)
    VALUES (p_event_domain, p_event_type, p_event_stream, p_delivery_lane, p_event_severity,
            p_event_subject_table, p_event_subject_ref, p_safe_payload)
    RETURNING id INTO v_id;
    RETURN v_id;
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION fn_iu_emit_event(text, text, text, text, text, text, text, jsonb) FROM PUBLIC;

-- +goose Down
DROP FUNCTION fn_iu_emit_event(text, text, text, text, text, text, text, jsonb);
