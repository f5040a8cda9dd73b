CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_decide_each(
    p_tally        iu_core.iu_route_run_tally,
    p_worker_name  text,
    p_event_domain text,
    p_pos          iu_core.iu_route_window,
    p_limit        integer
)
RETURNS iu_core.iu_route_run_tally
LANGUAGE plpgsql
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_decide_each: the fallback when the page statement failed. Same
    -- parameters, same result as fn_iu_route_worker_decide_page, but each event is decided and
    -- audited in its own exception block, so one bad event becomes a failed attempt and a dead
    -- letter (fn_iu_route_worker_fail) and the rest of the page is routed.
    -- ---------------------------------------------------------------------------------------
DECLARE
    t       iu_core.iu_route_run_tally := p_tally;
    e       record;
    v_key   text;
    v_n     integer;
    v_state text;
    v_msg   text;
BEGIN
    t.deliver_ids := '{}'; t.deliver_route_keys := '{}'; t.deliver_route_kinds := '{}';
    FOR e IN
        SELECT p.* FROM iu_core.fn_iu_route_worker_page(p_event_domain, p_pos, p_limit) p
         ORDER BY p.txid, p.id
    LOOP
        t.claimed := t.claimed + 1;
        t.last_txid := e.txid; t.last_id := e.id; t.last_created_at := e.created_at;
        IF e.decision = 'deliver' THEN
            t.deliver_ids := t.deliver_ids || e.id;
            t.deliver_route_keys := t.deliver_route_keys || e.route_key;
            t.deliver_route_kinds := t.deliver_route_kinds || e.route_kind;
            CONTINUE;
        END IF;
        v_key := iu_core.fn_iu_route_idempotency_key(p_worker_name, e.route_key, e.id);
        BEGIN
            INSERT INTO public.iu_route_attempt (event_ref, worker_name, route_key, route_kind, status, idempotency_key, event_txid)
            VALUES (e.id, p_worker_name, e.route_key, e.route_kind, e.decision, v_key, e.txid)
            ON CONFLICT DO NOTHING;
            GET DIAGNOSTICS v_n = ROW_COUNT;
            IF v_n = 0 THEN
                t.already_attempted := t.already_attempted + 1;
            ELSE
                t.attempts_written := t.attempts_written + 1;
                CASE e.decision
                    WHEN 'dry_run'  THEN t.dry_run := t.dry_run + 1;
                    WHEN 'disabled' THEN t.disabled := t.disabled + 1;
                    ELSE t.skipped := t.skipped + 1;
                END CASE;
            END IF;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
            t := iu_core.fn_iu_route_worker_fail(t, p_worker_name, e.id, e.route_key, e.route_kind, v_key,
                                         v_state, v_msg, 'decide');
        END;
    END LOOP;
    RETURN t;
END;
$$;
