CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_beat(p_worker_name text, p_event_domain text, p_payload jsonb)
RETURNS void
LANGUAGE plpgsql
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_beat: beat the worker's queue_heartbeat row when a beat is due
    -- (fn_iu_route_worker_beat_due), and re-register it with the PG_worker defaults if someone
    -- removed it. An invoked worker is alive, so a gated no-op beats too, with the reason in
    -- the payload.
    -- ---------------------------------------------------------------------------------------
BEGIN
    IF NOT EXISTS (SELECT 1 FROM iu_core.fn_iu_route_worker_beat_due(p_worker_name, p_payload->>'reason')) THEN
        RETURN; -- not due
    END IF;
    UPDATE public.queue_heartbeat hb
       SET last_beat_at      = now(),
           ticks_total       = hb.ticks_total + 1,
           status            = 'ok',
           last_beat_payload = p_payload
     WHERE hb.executor_id = p_worker_name;
    IF NOT FOUND THEN
        INSERT INTO public.queue_heartbeat (executor_id, executor_kind, domain_scope, status, last_beat_at,
                                     last_beat_payload, ticks_total, expected_cadence_seconds,
                                     stale_threshold_seconds, registered_via)
        SELECT p_worker_name, 'PG_worker', ARRAY[p_event_domain], 'ok', now(), p_payload, 1,
               d.expected_cadence_seconds, d.stale_threshold_seconds, 'route_worker'
          FROM iu_core.fn_queue_heartbeat_defaults('PG_worker') d
        ON CONFLICT (executor_id) DO NOTHING;
    END IF;
END;
$$;
