CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_snapshot()
RETURNS pg_snapshot
LANGUAGE plpgsql VOLATILE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- Internal: the snapshot a new window is taken with. pg_current_snapshot() leaves the
    -- calling transaction's own xid out of its in-progress list, so when the caller inserted
    -- events in the same transaction (or inserts more after the run, before it commits) and a
    -- newer transaction has completed, its own xid would read as "visible" and its rows would
    -- land behind done_snapshot, never to be claimed. Listing our own xid as in progress makes
    -- branch (a) of the claim pick those rows up once the transaction commits.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_snap pg_snapshot := pg_current_snapshot();
    v_self xid8        := pg_current_xact_id_if_assigned();
BEGIN
    IF v_self IS NULL OR NOT pg_visible_in_snapshot(v_self, v_snap) THEN
        RETURN v_snap;
    END IF;
    RETURN (least(pg_snapshot_xmin(v_snap), v_self)::text || ':' || pg_snapshot_xmax(v_snap)::text || ':'
            || (SELECT string_agg(x.xip::text, ',' ORDER BY x.xip)
                  FROM (SELECT pg_snapshot_xip(v_snap) AS xip UNION SELECT v_self) x))::pg_snapshot;
END;
$$;
