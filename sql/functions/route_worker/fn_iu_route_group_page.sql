CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_group_page(
    p_event_domain text,
    p_pos          iu_core.iu_route_window,
    p_limit        integer,
    p_bucket_lo    integer,
    p_bucket_hi    integer
)
RETURNS TABLE (id uuid, txid xid8, created_at timestamptz, route_key text, route_kind text, decision text, mine boolean)
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_group_page: a member's page. The claim's next page of the window for the
    -- member's buckets (fn_iu_route_worker_claim with [p_bucket_lo, p_bucket_hi): the other
    -- members' events are skipped inside its index scans, before their LIMITs, but for their
    -- waypoints), each row with its route and decision as fn_iu_route_worker_page gives them
    -- to a worker, and mine (fn_iu_route_group_claims): true for the member's own events,
    -- false for a waypoint, which is only read past (it moves the keyset; its route and
    -- decision are not used). Inlinable SQL, like the claim it wraps; the test is evaluated
    -- once a row here, and the join to the routes is the worker's.
    -- ---------------------------------------------------------------------------------------
    SELECT p.id, p.txid, p.created_at, rt.route_key, rt.route_kind,
           iu_core.fn_iu_route_decide(rt.route_key, rt.enabled, rt.dry_run),
           iu_core.fn_iu_route_group_claims(p.id, p.event_stream, p_bucket_lo, p_bucket_hi)
      FROM iu_core.fn_iu_route_worker_claim(p_event_domain, p_pos, p_limit, p_bucket_lo, p_bucket_hi) p
      LEFT JOIN public.iu_outbound_route rt
             ON rt.event_domain = p_event_domain
            AND rt.event_type = p.event_type
            AND rt.event_stream = p.event_stream
$$;
