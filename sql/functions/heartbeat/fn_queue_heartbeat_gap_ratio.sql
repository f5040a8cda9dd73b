CREATE OR REPLACE FUNCTION iu_core.fn_queue_heartbeat_gap_ratio(p_last_beat_at timestamptz, p_expected_cadence_seconds integer,
                                             p_now timestamptz)
RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT trunc(floor(extract(epoch FROM (p_now - p_last_beat_at)))::numeric / p_expected_cadence_seconds, 2)
$$;
