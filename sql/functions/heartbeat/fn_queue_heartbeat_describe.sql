CREATE OR REPLACE FUNCTION iu_core.fn_queue_heartbeat_describe(p_row public.queue_heartbeat)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT jsonb_build_object(
        'executor_kind',            p_row.executor_kind,
        'domain_scope',             to_jsonb(p_row.domain_scope),
        'status',                   p_row.status,
        'expected_cadence_seconds', p_row.expected_cadence_seconds,
        'stale_threshold_seconds',  p_row.stale_threshold_seconds,
        'ticks_total',              p_row.ticks_total,
        'last_beat_at',             p_row.last_beat_at,
        'last_beat_by',             p_row.last_beat_by,
        'last_beat_session_user',   p_row.last_beat_session_user,
        'registered_at',            p_row.registered_at,
        'registered_by',            p_row.registered_by,
        'registered_session_user',  p_row.registered_session_user,
        'owner_role',               p_row.owner_role,
        'registered_via',           p_row.registered_via,
        'paused',                   p_row.paused_at IS NOT NULL)
$$;
