CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_fail(
    p_tally           iu_core.iu_route_run_tally,
    p_worker_name     text,
    p_event_id        uuid,
    p_route_key       text,
    p_route_kind      text,
    p_idempotency_key text,
    p_error_code      text,
    p_error_message   text,
    p_stage           text
)
RETURNS iu_core.iu_route_run_tally
LANGUAGE plpgsql
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_fail: record one failure.
    --   p_tally   the run's tally; returned with failed / attempts_written / dead_lettered (or
    --             already_attempted, on a re-scan) counted
    --   p_worker_name, p_event_id, p_route_key, p_route_kind, p_idempotency_key  the event
    --   p_error_code, p_error_message  the SQLSTATE and message that was raised
    --   p_stage   'decide' (the audit insert failed) or 'deliver' (the seam raised)
    -- Writes a failed iu_route_attempt and a dead letter carrying the whole event row (so a
    -- replay needs nothing from event_outbox). Both are keyed by the idempotency key, so a
    -- re-scan after a cursor reset writes neither twice.
    -- ---------------------------------------------------------------------------------------
DECLARE
    t      iu_core.iu_route_run_tally := p_tally;
    v_snap jsonb;
    v_n    integer;
BEGIN
    v_snap := iu_core.fn_iu_route_event(p_event_id);

    INSERT INTO public.iu_route_attempt (event_ref, worker_name, route_key, route_kind, status, idempotency_key,
                                  detail, error_code, error_message, event_txid)
    VALUES (p_event_id, p_worker_name, p_route_key, p_route_kind, 'failed', p_idempotency_key,
            jsonb_build_object('stage', p_stage), p_error_code, p_error_message, (v_snap->>'txid')::xid8)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n = 1 THEN
        t.attempts_written := t.attempts_written + 1;
        t.failed := t.failed + 1;
    ELSE
        t.already_attempted := t.already_attempted + 1;
    END IF;

    INSERT INTO public.iu_route_dead_letter (worker_name, event_id, event_domain, event_type, event_stream, route_key,
                                      idempotency_key, event_snapshot, error_code, error_message)
    VALUES (p_worker_name, p_event_id, v_snap->>'event_domain', v_snap->>'event_type', v_snap->>'event_stream',
            p_route_key, p_idempotency_key, v_snap, p_error_code, p_error_message)
    ON CONFLICT (idempotency_key) DO NOTHING;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    t.dead_lettered := t.dead_lettered + v_n;
    RETURN t;
END;
$$;
