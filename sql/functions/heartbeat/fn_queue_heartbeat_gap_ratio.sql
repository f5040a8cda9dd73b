CREATE OR REPLACE FUNCTION iu_core.fn_queue_heartbeat_gap_ratio(p_last_beat_at timestamptz, p_expected_cadence_seconds integer,
                                             p_now timestamptz)
RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- NULL where no ratio exists: a cadence that is not positive (the table refuses one; a
    -- direct call got 22012, division by zero) or an infinite time (22008, interval out of
    -- range, before 17). Inlined into the stale-check and v_queue_health: a CASE, no call.
    SELECT CASE WHEN p_expected_cadence_seconds > 0 AND isfinite(p_now) AND isfinite(p_last_beat_at)
                THEN trunc(floor(extract(epoch FROM (p_now - p_last_beat_at)))::numeric / p_expected_cadence_seconds, 2) END
$$;
