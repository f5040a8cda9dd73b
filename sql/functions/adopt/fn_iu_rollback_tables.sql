CREATE OR REPLACE FUNCTION iu_core.fn_iu_rollback_tables()
RETURNS TABLE (version integer, table_name text, user_rows text)
LANGUAGE sql
IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- fn_iu_rollback_tables() -> (version, table, user_rows): every table a Down would drop
    -- that can hold rows the package did not create: the migration whose Down drops it, and
    -- the predicate of the rows that are not the package's own seed rows. The one list the
    -- rollback rule reads, both in each Down (fn_iu_require_empty_history_at) and before
    -- any Down runs (fn_iu_rollback_check, which iu-runner migrate down calls first, so a
    -- refused rollback changes nothing). A table adopted from the first generation is never
    -- dropped (its Down gives it back), so it is not checked. Not listed: tables whose rows
    -- the package derives from others (queue_stale_alert: one state row per executor, kept
    -- by a trigger; iu_route_attempt_tally: counts of the attempts), and its own bookkeeping.
    -- Internal.
    SELECT v.version, v.table_name, v.user_rows
      FROM (VALUES
        (3,  'public.event_outbox',          'true'),
        (4,  'public.iu_route_attempt',      'true'),
        (5,  'public.event_type_registry',
             $w$NOT ((event_domain, event_type) IN (('system', 'queue_worker_silent'), ('system', 'queue_worker_recovered')))$w$),
        (6,  'public.dot_config',
             'key <> ALL (iu_core.fn_iu_package_config_keys())'),
        (7,  'public.iu_outbound_route',     'true'),
        (8,  'public.iu_route_dead_letter',  'true'),
        (8,  'public.iu_route_worker_cursor', 'true'),
        (8,  'public.queue_heartbeat',       'true'),
        (10, 'public.job_queue',             'true'),
        (10, 'public.job_dead_letter',       'true'),
        (10, 'public.job_kind_pause',        'true'),
        (15, 'public.iu_route_group',        'true')) v(version, table_name, user_rows)
$$;
