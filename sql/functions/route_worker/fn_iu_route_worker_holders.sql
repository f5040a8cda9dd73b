CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_holders(p_done pg_snapshot, p_window pg_snapshot)
RETURNS jsonb
LANGUAGE plpgsql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- Internal: the transactions that hold a worker's windows open — in-progress xids of the
    -- stored snapshots that are still running, with their backend (pid, age) when visible.
    -- pid and backend_xid are visible to any role; xact_start, state and the age of another
    -- role's session need the executing role to be superuser or a member of pg_read_all_stats,
    -- otherwise they are null (the txid and the count are always there). Its callers (run,
    -- health) are SECURITY DEFINER, so that role is the function owner (the migrating role).
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_now_snap pg_snapshot := pg_current_snapshot();
    v_running  xid8[];
BEGIN
    SELECT array_agg(DISTINCT x.xip_txid)
      INTO v_running
      FROM (SELECT pg_snapshot_xip(p_done) AS xip_txid
            UNION ALL
            SELECT pg_snapshot_xip(p_window)) x
     WHERE x.xip_txid IS NOT NULL
       AND NOT pg_visible_in_snapshot(x.xip_txid, v_now_snap);
    IF v_running IS NULL THEN
        RETURN '[]'::jsonb;
    END IF;
    RETURN (
        SELECT coalesce(jsonb_agg(jsonb_build_object(
                    'txid', r.txid::text,
                    'pid', a.pid,
                    'usename', a.usename,
                    'application_name', a.application_name,
                    'state', a.state,
                    'xact_start', coalesce(a.xact_start, px.prepared),
                    'xact_age_seconds', round(extract(epoch FROM clock_timestamp() - coalesce(a.xact_start, px.prepared))::numeric, 3),
                    'prepared_gid', px.gid)
                ORDER BY coalesce(a.xact_start, px.prepared) NULLS LAST, r.txid), '[]'::jsonb)
          FROM unnest(v_running) AS r(txid)
          LEFT JOIN pg_stat_activity a ON a.backend_xid = r.txid::xid
          LEFT JOIN pg_prepared_xacts px ON px.transaction = r.txid::xid   -- a forgotten 2PC transaction
         -- Snapshots list the whole cluster's transactions; one in another database cannot
         -- write this event_outbox, so it holds nothing back here.
         WHERE (a.datname IS NULL OR a.datname = current_database())
           AND (px.database IS NULL OR px.database = current_database())
    );
END;
$$;
