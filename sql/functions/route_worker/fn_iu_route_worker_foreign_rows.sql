CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_foreign_rows(p_event_domain text)
RETURNS SETOF xid8
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_foreign_rows: committed rows of the domain whose txid lies at or
    -- beyond this cluster's next transaction id (at most one: the question is whether any
    -- exist). No transaction of this cluster can have written them (a visible row committed
    -- before the statement's snapshot, so its txid is below xmax), so they were restored from
    -- another cluster: left alone they would stay invisible to every window. One probe at the
    -- top of the (event_domain, txid, id) index; normally it finds nothing.
    -- Internal, inlinable SQL like fn_iu_route_worker_cursor_check (and for the same
    -- reason): executed by nobody but the owner, through SECURITY DEFINER entry points that
    -- pin search_path.
    -- ---------------------------------------------------------------------------------------
    SELECT o.txid
      FROM public.event_outbox o
     WHERE o.event_domain = p_event_domain
       AND o.txid >= pg_snapshot_xmax(pg_current_snapshot())
       AND o.txid IS DISTINCT FROM pg_current_xact_id_if_assigned()
     LIMIT 1
$$;
