CREATE OR REPLACE FUNCTION iu_core.fn_queue_heartbeat_is_protected(p_executor_id text)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- The protected set, in one place: iu_outbound_default always, plus the ids listed in
    -- queue.heartbeat.protected_executors.
    SELECT p_executor_id = 'iu_outbound_default'
        OR EXISTS (SELECT 1 FROM public.dot_config c
                    CROSS JOIN LATERAL regexp_split_to_table(c.value, '[\s,]+') AS x(id)
                    WHERE c.key = 'queue.heartbeat.protected_executors'
                      AND x.id <> '' AND x.id = p_executor_id)
$$;
