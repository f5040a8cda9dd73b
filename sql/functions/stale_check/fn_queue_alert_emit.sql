CREATE OR REPLACE FUNCTION iu_core.fn_queue_alert_emit(p_event_type text, p_severity text, p_executor_id text, p_payload jsonb)
RETURNS uuid
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- Internal (granted to no one; runs as the package owner inside fn_queue_stale_check):
    -- writes one system alert row. The envelope is fixed: domain system, stream alert, lane
    -- immediate, subject queue_heartbeat / the executor id. The payload is the package's
    -- own and still passes the table's hygiene CHECK.
DECLARE
    v_id uuid;
BEGIN
    INSERT INTO public.event_outbox (event_domain, event_type, event_stream, delivery_lane, event_severity,
                              event_subject_table, event_subject_ref, safe_payload)
    VALUES ('system', p_event_type, 'alert', 'immediate', p_severity, 'queue_heartbeat', p_executor_id, p_payload)
    RETURNING id INTO v_id;
    RETURN v_id;
END;
$$;
