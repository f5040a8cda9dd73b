-- 011_cut_heartbeat_ping.sql
--
-- Adds fn_cut_heartbeat_ping, the operator-facing ping of the cut pipeline: a thin
-- SECURITY DEFINER policy wrapper over the permissive primitive fn_queue_heartbeat_tick
-- (010), granted to workflow_admin only.
--
-- Why: a stable executor identity for an external operator, reachable from psql, that can
-- never false-heal a protected legacy marker. The policy is the cut seed's table, checked
-- top to bottom:
--   1. p_executor_name NULL/empty        -> RAISE 'fn_cut_heartbeat_ping: p_executor_name required' (22023)
--   2. protected executor                -> {"refused": true, "reason": "protected_legacy_silent_passive"}, no write
--      (iu_outbound_default always; more in dot_config queue.heartbeat.protected_executors)
--   3. p_executor_kind outside the 7-word vocabulary -> RAISE (22023)
--   4. p_status outside ok|warn|error    -> RAISE (22023)
--   5. queue.heartbeat.enabled not 'true' -> {"skipped": true}, no write (fail-closed)
--   6. else tick, metadata augmented with ping_origin, ping_function, ping_actor, ping_at
-- A refusal is JSON, not an exception, so the caller sees the reason and nothing is masked.

-- +goose Up

-- +goose StatementBegin
CREATE FUNCTION fn_cut_heartbeat_ping(
    p_executor_name text,
    p_executor_kind text  DEFAULT 'external_worker',
    p_status        text  DEFAULT 'ok',
    p_metadata      jsonb DEFAULT '{}'::jsonb
)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_metadata jsonb := coalesce(p_metadata, '{}'::jsonb);
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_cut_heartbeat_ping');
    IF p_executor_name IS NULL OR btrim(p_executor_name, E' \t\r\n\f\x0B') = '' THEN
        RAISE EXCEPTION 'fn_cut_heartbeat_ping: p_executor_name required' USING ERRCODE = '22023',
            HINT = 'Name the executor, e.g. cut_pipeline_operator_<scope>, so one stale row cannot silence another.';
    END IF;
    PERFORM fn_iu_require_name('fn_cut_heartbeat_ping', 'p_executor_name', p_executor_name);
    -- The same refusal fn_queue_heartbeat_tick and fn_queue_heartbeat_write return.
    IF fn_queue_heartbeat_is_protected(p_executor_name) THEN
        RETURN fn_queue_heartbeat_refusal(p_executor_name);
    END IF;
    IF p_executor_kind IS NULL OR NOT p_executor_kind = ANY (fn_queue_executor_kinds()) THEN
        RAISE EXCEPTION 'fn_cut_heartbeat_ping: p_executor_kind % not in 7-vocab (%)',
            coalesce(quote_literal(left(p_executor_kind, 60)), 'NULL'), array_to_string(fn_queue_executor_kinds(), ', ') USING ERRCODE = '22023';
    END IF;
    IF p_status IS NULL OR p_status NOT IN ('ok', 'warn', 'error') THEN
        RAISE EXCEPTION 'fn_cut_heartbeat_ping: p_status % not in {ok,warn,error}',
            coalesce(quote_literal(left(p_status, 60)), 'NULL') USING ERRCODE = '22023';
    END IF;
    IF NOT coalesce((SELECT c.value = 'true' FROM dot_config c WHERE c.key = 'queue.heartbeat.enabled'), false) THEN
        RETURN jsonb_build_object('skipped', true);
    END IF;
    PERFORM fn_iu_payload_require_clean('fn_cut_heartbeat_ping', 'p_metadata', v_metadata);

    RETURN fn_queue_heartbeat_tick(
        p_executor_name, p_executor_kind, p_status,
        v_metadata || jsonb_build_object(
            'ping_origin',   'cut_pipeline_caller',
            'ping_function', 'fn_cut_heartbeat_ping',
            'ping_actor',    coalesce(nullif(current_setting('app.actor', true), ''), 'cut_pipeline_operator_external'),
            'ping_at',       now()));
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION fn_cut_heartbeat_ping(text, text, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fn_cut_heartbeat_ping(text, text, text, jsonb) TO workflow_admin;

-- +goose Down
DROP FUNCTION fn_cut_heartbeat_ping(text, text, text, jsonb);
