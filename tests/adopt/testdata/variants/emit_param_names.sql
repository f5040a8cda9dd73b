-- variant: emit_param_names
-- models:  a fn_iu_emit_event whose parameters have other names (p_domain, p_type, ...;
--          an earlier revision of the function) but the same positions, types and defaults.
-- adoption: ADOPT, with care.
-- why:     every positional caller (spec §13: "positional fn_iu_emit_event(domain, type,
--          stream, lane, severity, subject_table, subject_ref, payload)") keeps working with
--          the same meaning. But CREATE OR REPLACE FUNCTION cannot rename input parameters
--          ("cannot change name of input parameter"): replacing it means DROP + CREATE, which
--          drops its grants (and PUBLIC's implicit EXECUTE), and callers that use named
--          notation (p_domain => ...) break. The plan must say which names it found and that
--          named-notation callers must change.
-- check:   SELECT proargnames[1] = 'p_domain' FROM pg_proc WHERE proname = 'fn_iu_emit_event'
DROP FUNCTION fn_iu_emit_event(text, text, text, text, text, text, text, jsonb);
CREATE FUNCTION fn_iu_emit_event(
    p_domain        text,
    p_type          text,
    p_stream        text,
    p_lane          text  DEFAULT 'standard',
    p_severity      text  DEFAULT 'info',
    p_subject_table text  DEFAULT NULL,
    p_subject_ref   text  DEFAULT NULL,
    p_payload       jsonb DEFAULT '{}'::jsonb
)
RETURNS uuid
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_id uuid;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM event_type_registry r WHERE r.event_domain = p_domain AND r.event_type = p_type) THEN
        RAISE EXCEPTION 'fn_iu_emit_event: event type %/% is not registered in event_type_registry', p_domain, p_type;
    END IF;
    IF p_payload ?| ARRAY['body','content','raw','vector','embedding','secret','token','password','ssn','personal_data'] THEN
        RAISE EXCEPTION 'fn_iu_emit_event: safe_payload carries a denylisted key';
    END IF;
    INSERT INTO event_outbox (event_domain, event_type, event_stream, delivery_lane, event_severity,
                              event_subject_table, event_subject_ref, safe_payload)
    VALUES (p_domain, p_type, p_stream, p_lane, p_severity, p_subject_table, p_subject_ref, coalesce(p_payload, '{}'::jsonb))
    RETURNING id INTO v_id;
    RETURN v_id;
END;
$$;
GRANT EXECUTE ON FUNCTION fn_iu_emit_event(text, text, text, text, text, text, text, jsonb) TO dot_executor, workflow_admin;
