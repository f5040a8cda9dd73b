CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_group_decide_page(
    p_tally        iu_core.iu_route_run_tally,
    p_group_name   text,
    p_event_domain text,
    p_pos          iu_core.iu_route_window,
    p_limit        integer,
    p_bucket_lo    integer,
    p_bucket_hi    integer,
    p_guarded      boolean,
    OUT tally      iu_core.iu_route_run_tally,
    OUT n_read     integer
)
LANGUAGE plpgsql
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_group_decide_page: a member's fn_iu_route_worker_decide_page. One page of
    -- the window (fn_iu_route_group_page) read in ONE statement: the member's own events
    -- (mine) decided and audited under the GROUP's name (worker_name and idempotency key
    -- iu_wrk:{group}:{route}:{event}, so each event has one audit row for the group whichever
    -- member routes it), the other members' waypoints only read past (the claim skipped the
    -- rest of their events inside its scans).
    --   tally   the run's tally with this page's own events added (claimed counts them);
    --           last_txid / last_id / last_created_at: the last row READ, own or a waypoint
    --           (the keyset moves past waypoints too); deliver_*: own events bound for the
    --           delivery seam
    --   n_read  every row the page read, own events and waypoints: a page shorter than
    --           p_limit exhausts the window for this member
    -- p_guarded as for a worker: false the plain INSERT, true ON CONFLICT DO NOTHING (a
    -- re-scan, or an event a member routed before a reset). Raises what the statement raises;
    -- the member's pass redoes the page guarded (unique_violation) or event by event.
    -- ---------------------------------------------------------------------------------------
DECLARE
    t          iu_core.iu_route_run_tally := p_tally;
    v_read     integer;
    v_mine     integer;
    k_dry      integer;
    k_disabled integer;
    k_skipped  integer;
    l_txid     xid8;
    l_id       uuid;
    l_created  timestamptz;
BEGIN
    IF NOT p_guarded THEN
        WITH decided AS MATERIALIZED (
            SELECT * FROM iu_core.fn_iu_route_group_page(p_event_domain, p_pos, p_limit, p_bucket_lo, p_bucket_hi)
        ), ins AS (
            INSERT INTO public.iu_route_attempt (event_ref, worker_name, route_key, route_kind, status, idempotency_key, event_txid)
            SELECT d.id, p_group_name, d.route_key, d.route_kind, d.decision,
                   iu_core.fn_iu_route_idempotency_key(p_group_name, d.route_key, d.id), d.txid
              FROM decided d
             WHERE d.mine AND d.decision <> 'deliver'
        )
        SELECT a.n, a.n_mine, a.n_dry, a.n_disabled, a.n_skipped,
               l.txid, l.id, l.created_at,
               a.ids, a.keys, a.kinds
          INTO v_read, v_mine, k_dry, k_disabled, k_skipped,
               l_txid, l_id, l_created,
               t.deliver_ids, t.deliver_route_keys, t.deliver_route_kinds
          FROM (SELECT count(*) AS n,
                       count(*) FILTER (WHERE d.mine) AS n_mine,
                       count(*) FILTER (WHERE d.mine AND d.decision = 'dry_run')  AS n_dry,
                       count(*) FILTER (WHERE d.mine AND d.decision = 'disabled') AS n_disabled,
                       count(*) FILTER (WHERE d.mine AND d.decision = 'skipped')  AS n_skipped,
                       array_agg(d.id ORDER BY d.txid, d.id)         FILTER (WHERE d.mine AND d.decision = 'deliver') AS ids,
                       array_agg(d.route_key ORDER BY d.txid, d.id)  FILTER (WHERE d.mine AND d.decision = 'deliver') AS keys,
                       array_agg(d.route_kind ORDER BY d.txid, d.id) FILTER (WHERE d.mine AND d.decision = 'deliver') AS kinds
                  FROM decided d) a
          LEFT JOIN LATERAL (SELECT d.txid, d.id, d.created_at FROM decided d
                              ORDER BY d.txid DESC, d.id DESC LIMIT 1) l ON true;
    ELSE
        WITH decided AS MATERIALIZED (
            SELECT * FROM iu_core.fn_iu_route_group_page(p_event_domain, p_pos, p_limit, p_bucket_lo, p_bucket_hi)
        ), ins AS (
            INSERT INTO public.iu_route_attempt (event_ref, worker_name, route_key, route_kind, status, idempotency_key, event_txid)
            SELECT d.id, p_group_name, d.route_key, d.route_kind, d.decision,
                   iu_core.fn_iu_route_idempotency_key(p_group_name, d.route_key, d.id), d.txid
              FROM decided d
             WHERE d.mine AND d.decision <> 'deliver'
            ON CONFLICT DO NOTHING
            RETURNING status
        )
        SELECT (SELECT count(*) FROM decided),
               (SELECT count(*) FROM decided d WHERE d.mine),
               i.n_dry, i.n_disabled, i.n_skipped,
               l.txid, l.id, l.created_at,
               dv.ids, dv.keys, dv.kinds
          INTO v_read, v_mine, k_dry, k_disabled, k_skipped,
               l_txid, l_id, l_created,
               t.deliver_ids, t.deliver_route_keys, t.deliver_route_kinds
          FROM (SELECT count(*) FILTER (WHERE ins.status = 'dry_run')  AS n_dry,
                       count(*) FILTER (WHERE ins.status = 'disabled') AS n_disabled,
                       count(*) FILTER (WHERE ins.status = 'skipped')  AS n_skipped
                  FROM ins) i
          CROSS JOIN (SELECT array_agg(d.id ORDER BY d.txid, d.id)         AS ids,
                             array_agg(d.route_key ORDER BY d.txid, d.id)  AS keys,
                             array_agg(d.route_kind ORDER BY d.txid, d.id) AS kinds
                        FROM decided d WHERE d.mine AND d.decision = 'deliver') dv
          LEFT JOIN LATERAL (SELECT d.txid, d.id, d.created_at FROM decided d
                              ORDER BY d.txid DESC, d.id DESC LIMIT 1) l ON true;
    END IF;

    t.claimed           := t.claimed + v_mine;
    t.dry_run           := t.dry_run + k_dry;
    t.disabled          := t.disabled + k_disabled;
    t.skipped           := t.skipped + k_skipped;
    t.attempts_written  := t.attempts_written + k_dry + k_disabled + k_skipped;
    t.already_attempted := t.already_attempted + v_mine - coalesce(array_length(t.deliver_ids, 1), 0)
                           - (k_dry + k_disabled + k_skipped);
    IF v_read > 0 THEN
        t.last_txid := l_txid; t.last_id := l_id; t.last_created_at := l_created;
    END IF;
    tally  := t;
    n_read := v_read;
END;
$$;
