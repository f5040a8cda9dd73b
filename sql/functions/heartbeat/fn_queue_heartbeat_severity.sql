CREATE OR REPLACE FUNCTION iu_core.fn_queue_heartbeat_severity(p_gap_ratio numeric)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN p_gap_ratio < 10 THEN 'warning' ELSE 'critical' END
$$;
