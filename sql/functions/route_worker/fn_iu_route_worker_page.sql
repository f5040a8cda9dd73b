CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_page(
    p_event_domain text,
    p_pos          iu_core.iu_route_window,
    p_limit        integer
)
RETURNS TABLE (id uuid, txid xid8, created_at timestamptz, route_key text, route_kind text, decision text)
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_page: the next page of the window with each event's route and
    -- decision (fn_iu_route_decide over the route resolved by (domain, type, stream); NULL
    -- route fields when none matches). The one query both decide_page and decide_each read.
    -- Inlinable SQL, like the claim it wraps.
    -- ---------------------------------------------------------------------------------------
    SELECT p.id, p.txid, p.created_at, rt.route_key, rt.route_kind,
           iu_core.fn_iu_route_decide(rt.route_key, rt.enabled, rt.dry_run)
      FROM iu_core.fn_iu_route_worker_claim(p_event_domain, p_pos, p_limit) p
      LEFT JOIN public.iu_outbound_route rt
             ON rt.event_domain = p_event_domain
            AND rt.event_type = p.event_type
            AND rt.event_stream = p.event_stream
$$;
