CREATE OR REPLACE FUNCTION public.fn_iu_route_dead_letter_replay(p_dead_letter_id uuid)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_dead_letter_replay(p_dead_letter_id) -> jsonb
    -- Re-attempts one dead-lettered event from its snapshot (nothing is read from event_outbox)
    -- as a fresh iu_route_attempt with the next attempt_no, deciding with the route as it is
    -- now (fn_iu_route_decide). A dry_run or sent outcome resolves the dead letter; a failure
    -- moves failed_attempts and last_failed_at; skipped or disabled (no route, or route off)
    -- leaves it open without counting a failure: the operator fixes the route and replays
    -- again. Already resolved -> {"replayed": false, "reason": "already_resolved"}. The dead
    -- letter row is locked, so two replays of one dead letter run one after the other.
    -- ---------------------------------------------------------------------------------------
DECLARE
    dl         public.iu_route_dead_letter%ROWTYPE;
    rt         public.iu_outbound_route%ROWTYPE;
    v_status   text;
    v_attempt  integer;
    v_res      jsonb;
    v_state    text;
    v_msg      text;
BEGIN
    IF p_dead_letter_id IS NULL THEN
        RAISE EXCEPTION 'fn_iu_route_dead_letter_replay: p_dead_letter_id required' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO dl FROM public.iu_route_dead_letter d WHERE d.id = p_dead_letter_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fn_iu_route_dead_letter_replay: dead letter % not found', p_dead_letter_id
            USING ERRCODE = 'P0002',
                  HINT = 'List the open ones: SELECT id, worker_name, idempotency_key, error_code FROM v_iu_route_dead_letter_open;';
    END IF;
    IF dl.resolved_at IS NOT NULL THEN
        RETURN jsonb_build_object('replayed', false, 'reason', 'already_resolved',
                                  'dead_letter_id', dl.id, 'resolved_at', dl.resolved_at,
                                  'resolution', dl.resolution, 'resolved_by', dl.resolved_by);
    END IF;

    -- The route as it is now (all NULL when none matches), for the event as it was.
    SELECT * INTO rt FROM public.iu_outbound_route r
     WHERE r.event_domain = dl.event_snapshot->>'event_domain'
       AND r.event_type   = dl.event_snapshot->>'event_type'
       AND r.event_stream = dl.event_snapshot->>'event_stream';

    SELECT coalesce(max(a.attempt_no), 0) + 1 INTO v_attempt
      FROM public.iu_route_attempt a WHERE a.idempotency_key = dl.idempotency_key;

    v_status := iu_core.fn_iu_route_decide(rt.route_key, rt.enabled, rt.dry_run);
    IF v_status = 'deliver' THEN
        BEGIN
            v_res := public.fn_iu_route_deliver(dl.event_snapshot, rt.route_key, rt.route_kind, dl.idempotency_key);
            v_status := 'sent';
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
            v_status := 'failed';
        END;
    END IF;

    INSERT INTO public.iu_route_attempt (event_ref, worker_name, route_key, route_kind, status, idempotency_key,
                                  attempt_no, detail, error_code, error_message, event_txid)
    VALUES (dl.event_id, dl.worker_name, rt.route_key, rt.route_kind, v_status, dl.idempotency_key, v_attempt,
            jsonb_build_object('replay_of', dl.id) || coalesce(v_res, '{}'::jsonb), v_state, v_msg,
            coalesce((dl.event_snapshot->>'txid')::xid8, '0'));  -- a snapshot without txid: the oldest range

    PERFORM iu_core.fn_iu_route_attempt_tally_add(dl.worker_name, ARRAY[v_status], '{1}', '{1}');

    IF v_status IN ('dry_run', 'sent') THEN
        UPDATE public.iu_route_dead_letter d
           SET resolved_at = now(), resolution = 'replayed_' || v_status, resolved_by = iu_core.fn_queue_actor(NULL, 'fn_iu_route_dead_letter_replay')
         WHERE d.id = dl.id
        RETURNING * INTO dl;
    ELSIF v_status = 'failed' THEN
        UPDATE public.iu_route_dead_letter d
           SET failed_attempts = d.failed_attempts + 1, last_failed_at = now(),
               error_code = v_state, error_message = v_msg
         WHERE d.id = dl.id
        RETURNING * INTO dl;
    END IF;

    RETURN jsonb_build_object(
        'replayed', true,
        'dead_letter_id', dl.id,
        'idempotency_key', dl.idempotency_key,
        'attempt_no', v_attempt,
        'status', v_status,
        'route_key', rt.route_key,
        'resolved', dl.resolved_at IS NOT NULL,
        'resolution', dl.resolution,
        'resolved_by', dl.resolved_by,
        'failed_attempts', dl.failed_attempts,
        'error_code', v_state,
        'error_message', v_msg);
END;
$$;
