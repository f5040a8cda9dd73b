CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_dead_letter_immutable()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    -- A dead letter is evidence: the event it kept (event_snapshot), its identity (id,
    -- event_id, idempotency_key, worker, domain, type, stream, route_key) and when it first
    -- failed never change, for the owner too. What may change is what a replay or an
    -- operator records about it: the resolution (resolved_at, resolution, resolved_by) and
    -- the failure counters a failed replay moves (failed_attempts, last_failed_at,
    -- error_code, error_message). The login that resolved it is stamped here, so a spoofed
    -- resolved_by (app.actor) is visible next to it.
    IF (to_jsonb(NEW) - ARRAY['resolved_at', 'resolution', 'resolved_by', 'resolved_session_user',
                              'failed_attempts', 'last_failed_at', 'error_code', 'error_message'])
       IS DISTINCT FROM
       (to_jsonb(OLD) - ARRAY['resolved_at', 'resolution', 'resolved_by', 'resolved_session_user',
                              'failed_attempts', 'last_failed_at', 'error_code', 'error_message']) THEN
        RAISE EXCEPTION 'fn_iu_route_dead_letter_immutable: only the resolution and failure counters of a dead letter may change'
            USING ERRCODE = 'IU001',
                  HINT = 'Resolve it (resolved_at, resolution, resolved_by) or replay it (fn_iu_route_dead_letter_replay); the event it kept stays as it was.';
    END IF;
    IF (NEW.resolved_at, NEW.resolution, NEW.resolved_by) IS DISTINCT FROM (OLD.resolved_at, OLD.resolution, OLD.resolved_by) THEN
        NEW.resolved_session_user := session_user;
    ELSE
        NEW.resolved_session_user := OLD.resolved_session_user;
    END IF;
    RETURN NEW;
END;
$$;
