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
    -- fn_iu_route_group_page: a member's page. The claim's next page of the window (every
    -- event of the domain, fn_iu_route_worker_claim exactly as a worker reads it), each row
    -- with mine = its stream's bucket (fn_iu_route_group_bucket) lies in [p_bucket_lo,
    -- p_bucket_hi), and for those the route and the decision (fn_iu_route_decide), as
    -- fn_iu_route_worker_page gives them to a worker; the others' route fields are NULL. A
    -- member reads past the other members' events (they move its keyset and end its window
    -- like its own) and routes only its own. Inlinable SQL, like the claim it wraps.
    -- ---------------------------------------------------------------------------------------
    SELECT p.id, p.txid, p.created_at, rt.route_key, rt.route_kind,
           CASE WHEN m.mine THEN iu_core.fn_iu_route_decide(rt.route_key, rt.enabled, rt.dry_run) END,
           m.mine
      FROM iu_core.fn_iu_route_worker_claim(p_event_domain, p_pos, p_limit) p
     CROSS JOIN LATERAL (SELECT b.bucket >= p_bucket_lo AND b.bucket < p_bucket_hi AS mine
                           FROM (SELECT iu_core.fn_iu_route_group_bucket(p.event_stream) AS bucket) b) m
      LEFT JOIN public.iu_outbound_route rt
             ON m.mine
            AND rt.event_domain = p_event_domain
            AND rt.event_type = p.event_type
            AND rt.event_stream = p.event_stream
$$;
