CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_lock_holders(p_lock_id integer)
RETURNS jsonb
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- Who holds a worker's lock, by name: every session of this database that holds the
    -- advisory lock (fn_iu_route_worker_lock_class(), lock_id), each described by
    -- fn_iu_session_describe (pid and login always; application, state and transaction age
    -- as the package owner sees them: SECURITY DEFINER). A run or a reset in progress holds
    -- it for its transaction; but any login may take an advisory lock of any key, no grant
    -- needed (pg_advisory_lock(26997, <lock_id>)), and then every run answers busy: this names
    -- that session in the busy answer, fn_iu_route_worker_health and v_queue_health. '[]' when
    -- nobody holds it. Reads pg_locks (the lock manager's shared table: no wait, no lock).
    -- ---------------------------------------------------------------------------------------
    SELECT coalesce(jsonb_agg(iu_core.fn_iu_session_describe(l.pid) ORDER BY l.pid), '[]'::jsonb)
      FROM pg_catalog.pg_locks l
     WHERE l.locktype = 'advisory' AND l.granted
       AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database())
       AND l.classid = iu_core.fn_iu_route_worker_lock_class()::pg_catalog.oid
       AND l.objid = p_lock_id::pg_catalog.oid
       AND l.objsubid = 2
$$;
