CREATE OR REPLACE FUNCTION iu_core.fn_iu_package_config_keys()
RETURNS text[]
LANGUAGE sql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- fn_iu_package_config_keys() -> the dot_config keys the package's migrations insert
    -- (their own seed rows). The rollback rule reads it: a dot_config holding any other key
    -- holds configuration the package did not create (fn_iu_rollback_tables). A test holds
    -- it equal to the keys of a fresh install. Internal.
    SELECT ARRAY['iu_core.routes_enabled', 'iu_core.route_worker_enabled',
                 'queue.heartbeat.enabled', 'queue.heartbeat.stale_threshold_seconds',
                 'queue.heartbeat.protected_executors', 'queue.heartbeat.self_registered_limit',
                 'queue.job.retention_seconds', 'queue.notify.bridge_enabled',
                 'retention.event_outbox_days', 'retention.route_attempt_days', 'retention.partition_txids']
$$;
