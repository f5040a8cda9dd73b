CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_page(
    p_worker_name  text,
    p_event_domain text,
    p_pos          iu_core.iu_route_window,
    p_limit        integer
)
RETURNS TABLE (id uuid, txid xid8, created_at timestamptz, route_key text, route_kind text, decision text,
               idempotency_key text)
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_page: the next page of the window with each event's route, decision
    -- (fn_iu_route_decide over the route resolved by (domain, type, stream); NULL route fields
    -- when none matches) and the worker's idempotency key for it (fn_iu_route_idempotency_key).
    -- The one query decide_page and decide_each read.
    -- The decision and the key's prefix are computed once per route of the domain, on the
    -- join's route side (the hash join's build), so each event costs one join of the prefix
    -- to its id rather than a decision and four: ~1 k instructions an event of a page's ~48 k.
    -- An event no route matches gets the decision and the prefix of no route, as the two
    -- functions give them for NULLs (the decision folds into a constant when planned).
    -- Inlinable SQL, like the claim it wraps.
    -- ---------------------------------------------------------------------------------------
    SELECT p.id, p.txid, p.created_at, rt.route_key, rt.route_kind,
           coalesce(rt.decision, iu_core.fn_iu_route_decide(NULL, NULL, NULL)),
           coalesce(rt.key_prefix, iu_core.fn_iu_route_idempotency_prefix(p_worker_name, NULL)) || p.id::text
      FROM iu_core.fn_iu_route_worker_claim(p_event_domain, p_pos, p_limit) p
      LEFT JOIN (SELECT r.event_type, r.event_stream, r.route_key, r.route_kind,
                        iu_core.fn_iu_route_decide(r.route_key, r.enabled, r.dry_run) AS decision,
                        iu_core.fn_iu_route_idempotency_prefix(p_worker_name, r.route_key) AS key_prefix
                   FROM public.iu_outbound_route r
                  WHERE r.event_domain = p_event_domain) rt
             ON rt.event_type = p.event_type
            AND rt.event_stream = p.event_stream
$$;
