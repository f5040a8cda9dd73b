CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_deliver_page(p_tally iu_core.iu_route_run_tally, p_worker_name text)
RETURNS iu_core.iu_route_run_tally
LANGUAGE plpgsql
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_deliver_page: hand the page's deliver_* events to the delivery seam,
    -- one isolated block each (only enabled, dry_run = false routes get here). Success writes a
    -- 'sent' attempt; anything raised becomes a failed attempt + dead letter. An event already
    -- attempted (a re-scan) is never handed over twice. Returns the tally with deliver_* spent.
    -- ---------------------------------------------------------------------------------------
DECLARE
    t       iu_core.iu_route_run_tally := p_tally;
    v_key   text;
    v_event jsonb;
    v_res   jsonb;
    v_state text;
    v_msg   text;
BEGIN
    FOR i IN 1 .. coalesce(array_length(t.deliver_ids, 1), 0) LOOP
        v_key := iu_core.fn_iu_route_idempotency_key(p_worker_name, t.deliver_route_keys[i], t.deliver_ids[i]);
        IF EXISTS (SELECT 1 FROM public.iu_route_attempt a WHERE a.idempotency_key = v_key) THEN
            t.already_attempted := t.already_attempted + 1;
            CONTINUE;
        END IF;
        BEGIN
            v_event := iu_core.fn_iu_route_event(t.deliver_ids[i]);
            v_res := public.fn_iu_route_deliver(v_event, t.deliver_route_keys[i], t.deliver_route_kinds[i], v_key);
            INSERT INTO public.iu_route_attempt (event_ref, worker_name, route_key, route_kind, status, idempotency_key, detail,
                                          event_txid)
            VALUES (t.deliver_ids[i], p_worker_name, t.deliver_route_keys[i], t.deliver_route_kinds[i], 'sent', v_key,
                    coalesce(v_res, '{}'::jsonb), (v_event->>'txid')::xid8)
            ON CONFLICT DO NOTHING;
            t.attempts_written := t.attempts_written + 1;
            t.sent := t.sent + 1;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
            t := iu_core.fn_iu_route_worker_fail(t, p_worker_name, t.deliver_ids[i], t.deliver_route_keys[i],
                                         t.deliver_route_kinds[i], v_key, v_state, v_msg, 'deliver');
        END;
    END LOOP;
    t.deliver_ids := NULL; t.deliver_route_keys := NULL; t.deliver_route_kinds := NULL;
    RETURN t;
END;
$$;
