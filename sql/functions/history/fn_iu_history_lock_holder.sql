CREATE OR REPLACE FUNCTION iu_core.fn_iu_history_lock_holder()
RETURNS jsonb
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_history_lock_holder() -> jsonb: the session that holds the partition-maintenance
    -- lock (fn_iu_history_lock), NULL when nobody (else) does: {pid, login, application_name,
    -- state, xact_start, xact_age_seconds, prepared_gid}. pid, login and application_name are
    -- visible to any role; state and the transaction's start need the function owner to be
    -- superuser or a member of pg_read_all_stats (else null). A prepared (two-phase)
    -- transaction has no pid: its gid says which. The busy answers of maintenance and
    -- retention and v_queue_health's history row name it. Internal.
    -- ---------------------------------------------------------------------------------------
    SELECT jsonb_build_object(
               'pid', l.pid,
               'login', coalesce(a.usename, px.owner::text),
               'application_name', a.application_name,
               'state', a.state,
               'xact_start', coalesce(a.xact_start, px.prepared),
               'xact_age_seconds', floor(extract(epoch FROM clock_timestamp() - coalesce(a.xact_start, px.prepared)))::bigint,
               'prepared_gid', px.gid)
      FROM pg_locks l
      LEFT JOIN pg_stat_activity a ON a.pid = l.pid
      LEFT JOIN pg_prepared_xacts px ON l.pid IS NULL AND px.transaction::text = split_part(l.virtualtransaction, '/', 2)
     WHERE l.locktype = 'relation'
       AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
       AND l.relation = to_regclass('iu_core.iu_history_lock')
       AND l.granted
       AND l.mode <> 'AccessShareLock'          -- a size probe, not a holder
       AND l.pid IS DISTINCT FROM pg_backend_pid()
     ORDER BY coalesce(a.xact_start, px.prepared) NULLS LAST
     LIMIT 1
$$;
