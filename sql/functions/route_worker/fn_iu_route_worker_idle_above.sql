CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_idle_above(p_event_domain text, p_done pg_snapshot)
RETURNS SETOF text
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_idle_above(p_event_domain, p_done): the rest of half (b) of the idle
    -- path's outbox question: 'new' for each row of the domain at or above the hot ceiling
    -- (fn_iu_outbox_hot_ceiling) and at or above p_done's xmax that the statement can see,
    -- below its snapshot's xmax. fn_iu_route_worker_idle_new asks the same below the ceiling;
    -- together they are half (b). Asked by fn_iu_route_worker_run only when the probe saw
    -- transaction ids past the ceiling (txids crossed into the next partition since
    -- maintenance last moved it): the poll then costs this statement more until the next
    -- maintenance, never a row. The ceiling is a constant when the statement is planned, so
    -- the partitions below it are not in the plan; the statement's snapshot xmax prunes
    -- those ahead and the default one when it starts (no committed row of this cluster lies
    -- at or above it: rows restored from another cluster beyond it are left to the full
    -- pass, which refuses them at the first event or due beat). Before maintenance has set a
    -- ceiling (it is 0 as installed) every poll asks it, and it plans what the idle question
    -- planned before there was a ceiling. A refresh committed between the probe and this
    -- statement can make one poll read idle (rows between the old ceiling and the new one are
    -- asked by neither); the next poll's probe plans the new ceiling and finds them (the
    -- idle path writes nothing, so nothing is skipped).
    -- Internal: inlinable SQL, owner only.
    -- ---------------------------------------------------------------------------------------
    SELECT 'new'
      FROM public.event_outbox o
     WHERE o.event_domain = p_event_domain
       AND o.txid >= iu_core.fn_iu_outbox_hot_ceiling(p_event_domain)
       AND o.txid >= pg_snapshot_xmax(coalesce(p_done, '1:1:'::pg_snapshot))
       AND o.txid < pg_snapshot_xmax(pg_current_snapshot())
$$;
