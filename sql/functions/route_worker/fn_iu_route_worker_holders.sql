CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_holders(p_done pg_snapshot, p_window pg_snapshot)
RETURNS jsonb
LANGUAGE plpgsql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- Internal: the transactions that hold a worker's windows open — in-progress xids of the
    -- stored snapshots that are still running, with their backend (pid, age) when visible.
    -- One object per such transaction and backend row, ordered by xact_start (nulls last),
    -- then txid: txid, pid, usename, application_name, state, xact_start, xact_age_seconds,
    -- and prepared_gid for a forgotten prepared (two-phase) transaction, which has no backend
    -- (its xact_start is when it was prepared). Transactions of another database are left
    -- out: they cannot write this event_outbox, so they hold nothing back here.
    -- pid and backend_xid are visible to any role; xact_start, state and the age of another
    -- role's session need the executing role to be superuser or a member of pg_read_all_stats,
    -- otherwise they are null (the txid and the count are always there). Its callers (run,
    -- health) are SECURITY DEFINER, so that role is the function owner (the migrating role).
    -- A caught-up poll whose position waits on a running transaction asks this on every run,
    -- so it is one statement over what the views pg_stat_activity and pg_prepared_xacts are
    -- made of, pg_stat_get_activity(NULL) and pg_prepared_xact(), with only the columns it
    -- reports: the views add a hash join with pg_database and one with pg_authid over every
    -- backend and prepared transaction. The views' joins, for the matching rows only:
    --   * usename: the view's pg_authid.rolname is null for a role dropped while its session
    --     runs; pg_get_userbyid would say 'unknown (OID=n)', so it is asked only when the role
    --     exists (regrole's output is the bare OID exactly when no role has it; a role's name
    --     is quoted when it starts with a digit). pg_authid itself is not readable by a
    --     non-superuser owner; pg_get_userbyid and regrole read the role cache;
    --   * the database: a row is left out when its database (backend or prepared) exists
    --     under another name than current_database(), as the views' datname said; a
    --     background process (no database) or a database dropped meanwhile keeps it.
    -- Both functions check the executing role's privileges themselves, as under the views
    -- (a view runs its functions as the caller), so the owner sees what it saw before.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_now     pg_snapshot := pg_catalog.pg_current_snapshot();
    v_listed  pg_snapshot := p_done;   -- whose in-progress list is looked up
    v_holders jsonb;
BEGIN
    -- Every listed id lies below its snapshot's xmax; when the current snapshot's xmin is
    -- at or above both xmaxes, every one of them has completed: nothing to look up (the
    -- answer of a full pass or a health call with nothing in progress, without a statement).
    IF NOT coalesce(pg_catalog.pg_snapshot_xmin(v_now)
                    < GREATEST(pg_catalog.pg_snapshot_xmax(p_done), pg_catalog.pg_snapshot_xmax(p_window)), false) THEN
        RETURN '[]'::jsonb;
    END IF;
    IF p_window IS NOT NULL THEN
        -- Both lists, each transaction once: a snapshot whose in-progress list is their
        -- union (its bounds only bound that list; nothing else reads them). The idle run
        -- asks about p_done alone, so it has no union to build.
        SELECT pg_catalog.format('%s:%s:%s',
                   LEAST(pg_catalog.pg_snapshot_xmin(p_done), pg_catalog.pg_snapshot_xmin(p_window)),
                   GREATEST(pg_catalog.pg_snapshot_xmax(p_done), pg_catalog.pg_snapshot_xmax(p_window)),
                   coalesce(pg_catalog.string_agg(u.txid::text, ',' ORDER BY u.txid), ''))::pg_catalog.pg_snapshot
          INTO v_listed
          FROM (SELECT pg_catalog.pg_snapshot_xip(p_done)
                UNION
                SELECT pg_catalog.pg_snapshot_xip(p_window)) u(txid);
    END IF;
    SELECT coalesce(pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                'txid', r.txid::text,
                'pid', a.pid,
                'usename', CASE WHEN a.usesysid::pg_catalog.regrole::text <> a.usesysid::text
                                THEN pg_catalog.pg_get_userbyid(a.usesysid) END,
                'application_name', a.application_name,
                'state', a.state,
                'xact_start', coalesce(a.xact_start, px.prepared),
                'xact_age_seconds', pg_catalog.round(EXTRACT(epoch FROM pg_catalog.clock_timestamp() - coalesce(a.xact_start, px.prepared))::numeric, 3),
                'prepared_gid', px.gid)
            ORDER BY coalesce(a.xact_start, px.prepared) NULLS LAST, r.txid), '[]'::jsonb)
      INTO v_holders
      FROM pg_catalog.pg_snapshot_xip(v_listed) AS r(txid)
      -- Each a parameterized scan of the function's rows (materialized once per statement):
      -- a nested loop over the few listed ids, never a hash of every backend.
      LEFT JOIN LATERAL (SELECT s.pid, s.usesysid, s.application_name, s.state, s.xact_start, s.datid
                           FROM pg_catalog.pg_stat_get_activity(NULL) s
                          WHERE s.backend_xid = r.txid::xid
                         OFFSET 0) a ON true
      LEFT JOIN LATERAL (SELECT p.gid, p.prepared, p.dbid
                           FROM pg_catalog.pg_prepared_xact() p
                          WHERE p.transaction = r.txid::xid     -- a forgotten 2PC transaction
                         OFFSET 0) px ON true
     WHERE NOT pg_catalog.pg_visible_in_snapshot(r.txid, v_now)
       -- Snapshots list the whole cluster's transactions; one in another database cannot
       -- write this event_outbox, so it holds nothing back here.
       AND ((a.datid IS NULL AND px.dbid IS NULL)
            OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_database d
                            WHERE d.oid IN (a.datid, px.dbid)
                              AND d.datname <> pg_catalog.current_database()));
    RETURN v_holders;
END;
$$;
