CREATE OR REPLACE FUNCTION iu_core.fn_queue_heartbeat_floor_seconds()
RETURNS integer
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    -- The global floor, parsed in this one place (fn_queue_stale_check and v_queue_health
    -- both call it). Any non-negative integer, surrounding whitespace ignored, is the
    -- floor in seconds, clamped to 2147483647 (the largest integer): "set it huge and the
    -- stale-check is inert" holds for any number of digits. A missing, empty or non-integer
    -- value ('abc', '-5', '1e3', '1.5') means no floor (0), so every executor's own threshold
    -- still applies; the floor can only make alerts rarer. SECURITY DEFINER: readers of
    -- v_queue_health (workflow_admin) need not read dot_config themselves.
    SELECT coalesce((
        SELECT CASE WHEN length(v.digits) > 10 THEN 2147483647
                    ELSE least(v.digits::bigint, 2147483647)::integer END
          FROM public.dot_config c
         CROSS JOIN LATERAL (
               SELECT coalesce(nullif(ltrim(regexp_replace(c.value, '^[[:space:]]+|[[:space:]]+$', '', 'g'), '0'), ''), '0')
               ) AS v(digits)
         WHERE c.key = 'queue.heartbeat.stale_threshold_seconds'
           AND c.value ~ '^[[:space:]]*[0-9]+[[:space:]]*$'), 0)
$$;
