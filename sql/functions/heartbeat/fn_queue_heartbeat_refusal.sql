CREATE OR REPLACE FUNCTION iu_core.fn_queue_heartbeat_refusal(p_executor_id text)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- The one refusal every caller-facing beat returns for a protected executor (ping, tick,
    -- write), or NULL when the executor may be beaten. A refusal is JSON, not an exception:
    -- the caller sees the reason, and nothing was written.
    SELECT CASE WHEN iu_core.fn_queue_heartbeat_is_protected(p_executor_id)
                THEN jsonb_build_object('refused', true, 'reason', 'protected_legacy_silent_passive') END
$$;
