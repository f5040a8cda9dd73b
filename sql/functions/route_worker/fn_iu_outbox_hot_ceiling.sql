CREATE OR REPLACE FUNCTION iu_core.fn_iu_outbox_hot_ceiling(p_event_domain text)
RETURNS xid8
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_outbox_hot_ceiling(p_event_domain) -> xid8: the upper bound of the event_outbox
    -- partition that held the next transaction id when partition maintenance last ran,
    -- written into this body as a constant by fn_iu_outbox_hot_refresh, as
    -- fn_iu_outbox_hot_txid's lower bound is ('0' until maintenance has set it: every row
    -- lies above it, so until then every poll asks fn_iu_route_worker_idle_above, which
    -- plans what the idle question planned before there was a ceiling). Together the two
    -- bound the partitions the idle path's new-rows question (fn_iu_route_worker_idle_new)
    -- is planned over: [hot txid, hot ceiling), which between two crossings is one
    -- partition, the one txids are assigned in. Internal, owner only.
    --
    -- Why a ceiling: without it the question's plan holds the partitions ahead (maintenance
    -- keeps two to three of them) and the default one, pruned when the statement starts by
    -- its snapshot's xmax; that pruning, the Append node a plan of several partitions needs
    -- and the bound by the snapshot's xmax cost a caught-up poll about 8 % (callgrind: 32 k
    -- of 384 k instructions). A plan of one partition needs none of them.
    --
    -- Why any ceiling is safe: no committed row of this cluster lies at or above the
    -- statement's snapshot xmax, so the ceiling drops nothing while that xmax is at or below
    -- it. The probe (fn_iu_route_worker_idle_probe) reports when it is not (`more`: txids
    -- passed the ceiling since maintenance last ran, or it was never set), and the run then
    -- asks the rows above it (fn_iu_route_worker_idle_above) before it trusts a quiet answer,
    -- until the next maintenance moves the ceiling up. So the ceiling decides how much a
    -- statement plans, never what it finds; a stale or foreign one (a dump restored into
    -- another cluster) costs speed, not rows. What it must be is the same for both
    -- questions: the probe returns the ceiling it was planned with, and the run trusts the
    -- rows-above answer only while the ceiling is still that one (a maintenance that moved
    -- it in between left the rows between the two asked by neither).
    -- Inlined where it is called (STABLE SQL, as fn_iu_outbox_hot_txid: see there why), so
    -- replacing it discards every plan made with the old constant. p_event_domain is not
    -- read; it keeps the call non-constant, so the planner inlines rather than evaluates it.
    -- ---------------------------------------------------------------------------------------
    SELECT '0'::pg_catalog.xid8
$$;
