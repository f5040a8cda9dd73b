CREATE OR REPLACE FUNCTION iu_core.fn_queue_heartbeat_defaults(
    p_executor_kind              text,
    OUT expected_cadence_seconds integer,
    OUT stale_threshold_seconds  integer
)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- The cadence and stale threshold an executor gets when nobody registered its own, in
    -- one place. A route worker (PG_worker) beats on every run; cron runs it every minute and
    -- a batch may take a while under load, so it is stale after five missed minutes. Any other
    -- executor first seen through the permissive tick is stale after three missed beats.
    SELECT 60, CASE WHEN p_executor_kind = 'PG_worker' THEN 300 ELSE 180 END
$$;
