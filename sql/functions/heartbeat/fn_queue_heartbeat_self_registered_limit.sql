CREATE OR REPLACE FUNCTION iu_core.fn_queue_heartbeat_self_registered_limit()
RETURNS integer
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- How many executors executors may create themselves (a first tick or ping of an unknown
    -- id, a runner's first beat): queue.heartbeat.self_registered_limit, a non-negative
    -- integer (surrounding whitespace ignored, clamped to 2147483647); missing or anything
    -- else: 100. Operators register any number (fn_queue_heartbeat_register).
    SELECT coalesce((
        SELECT CASE WHEN length(v.digits) > 10 THEN 2147483647
                    ELSE least(v.digits::bigint, 2147483647)::integer END
          FROM public.dot_config c
         CROSS JOIN LATERAL (
               SELECT coalesce(nullif(ltrim(regexp_replace(c.value, '^[[:space:]]+|[[:space:]]+$', '', 'g'), '0'), ''), '0')
               ) AS v(digits)
         WHERE c.key = 'queue.heartbeat.self_registered_limit'
           AND c.value ~ '^[[:space:]]*[0-9]+[[:space:]]*$'), 100)
$$;
