CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_decide_page(
    p_tally        iu_core.iu_route_run_tally,
    p_worker_name  text,
    p_event_domain text,
    p_pos          iu_core.iu_route_window,
    p_limit        integer,
    p_guarded      boolean,
    p_deliverable  boolean DEFAULT true
)
RETURNS iu_core.iu_route_run_tally
LANGUAGE plpgsql
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_decide_page: claim, decide and audit one page in ONE statement.
    --   p_tally        the run's tally, returned with this page added
    --   p_worker_name, p_event_domain   the worker and the domain its cursor consumes
    --   p_pos, p_limit   the window and the keyset position
    --   p_guarded      false: the plain INSERT (the common case: nothing of the page was ever
    --                  attempted); true: INSERT ... ON CONFLICT DO NOTHING (a re-scan)
    --   p_deliverable  whether a route of the domain decides deliver (the caller asked, in the
    --                  statement that read the cursor); false, with p_guarded false: the page
    --                  written by the INSERT straight from the claim, below
    -- Writes one iu_route_attempt per event decided skipped / disabled / dry_run; events bound
    -- for the delivery seam are returned in deliver_* for fn_iu_route_worker_deliver_page.
    -- Raises whatever the statement raises; the caller redoes the page guarded when that is a
    -- unique_violation (some key of the page exists: a re-scan after a cursor reset or a rebase)
    -- and event by event (decide_each) otherwise.
    -- Why two statements and not always ON CONFLICT: ON CONFLICT DO NOTHING is a speculative
    -- insertion, for every row: a probe of every unique index of the partition first (the
    -- identity primary key included), then the insert, then a second WAL record confirming it.
    -- Measured on 1,000-row pages that is ~35 % of the page's INSERT, paid on every page to
    -- protect the rare re-scan. The plain INSERT keeps the same guarantee: the unique index
    -- still refuses a second (idempotency_key, attempt_no, event_txid), only loudly, and the
    -- loud case is then answered by the guarded statement, which counts the existing keys as
    -- already_attempted exactly as before. Nothing is written twice either way: the failed
    -- statement's rows are rolled back with its subtransaction.
    -- Why the INSERT straight from the claim when no route delivers (every route of the
    -- domain dry_run or disabled, as the package ships: delivery is unbuilt): then every
    -- event of the page is written, so the INSERT reads the page itself and what the run
    -- needs (the counts per decision, the last position) comes back through RETURNING of
    -- three columns, instead of the page materialized whole and read three times (by the
    -- INSERT, the counts, the last position): about 2.2 M instructions of a 1,000-event
    -- page's ~50 M. The last position is still the greatest (txid, id) written, whatever
    -- order the rows come back in. A route that turns deliverable after the caller asked
    -- makes this statement fail, never skip: its event's decision 'deliver' is not an
    -- attempt status (iu_route_attempt_status_check), so the INSERT raises, the
    -- subtransaction is rolled back, and the caller redoes the page event by event
    -- (decide_each), which hands it to the seam. The last event's created_at (the cursor's
    -- last_created_at, the keyset a rolled-back first generation resumes from) is one probe
    -- of the outbox by its key.
    -- ---------------------------------------------------------------------------------------
DECLARE
    t          iu_core.iu_route_run_tally := p_tally;
    v_page     integer;
    k_dry      integer;
    k_disabled integer;
    k_skipped  integer;
    l_txid     xid8;
    l_id       uuid;
    l_created  timestamptz;
BEGIN
    IF NOT p_guarded AND NOT p_deliverable THEN
        WITH ins AS (
            INSERT INTO public.iu_route_attempt (event_ref, worker_name, route_key, route_kind, status, idempotency_key, event_txid)
            SELECT d.id, p_worker_name, d.route_key, d.route_kind, d.decision,
                   iu_core.fn_iu_route_idempotency_key(p_worker_name, d.route_key, d.id), d.txid
              FROM iu_core.fn_iu_route_worker_page(p_event_domain, p_pos, p_limit) d
            RETURNING status, event_txid, event_ref
        )
        -- Every row written is dry_run, disabled or skipped (a 'deliver' raises, above), so
        -- dry_run is the rest of the count. The last position: the greatest id of the
        -- greatest txid written (an aggregate and a filtered read, not a sort of the page).
        SELECT a.n, a.n - a.n_disabled - a.n_skipped, a.n_disabled, a.n_skipped, a.t, l.event_ref, e.created_at
          INTO v_page, k_dry, k_disabled, k_skipped, l_txid, l_id, l_created
          FROM (SELECT count(*) AS n,
                       count(*) FILTER (WHERE i.status = 'disabled') AS n_disabled,
                       count(*) FILTER (WHERE i.status = 'skipped')  AS n_skipped,
                       max(i.event_txid) AS t
                  FROM ins i) a
          LEFT JOIN LATERAL (SELECT i.event_ref FROM ins i WHERE i.event_txid = a.t
                              ORDER BY i.event_ref DESC LIMIT 1) l ON true
          -- the last event's created_at (the cursor's last_created_at), one probe; its txid is
          -- bounded as the claim bounds it, so only the window's partitions are set up
          LEFT JOIN LATERAL (SELECT o.created_at FROM public.event_outbox o
                              WHERE o.event_domain = p_event_domain
                                AND o.txid = a.t AND o.id = l.event_ref
                                AND o.txid >= pg_snapshot_xmin(coalesce((p_pos).done_snapshot, '1:1:'::pg_snapshot))
                                AND o.txid < pg_snapshot_xmax((p_pos).window_snapshot)) e ON true;
        t.deliver_ids := NULL; t.deliver_route_keys := NULL; t.deliver_route_kinds := NULL;
    ELSIF NOT p_guarded THEN
        -- Every non-deliver event of the page is written (or the statement raises), so the
        -- counts are the page's decisions, read in the same pass as the deliver list.
        WITH decided AS MATERIALIZED (
            SELECT * FROM iu_core.fn_iu_route_worker_page(p_event_domain, p_pos, p_limit)
        ), ins AS (
            INSERT INTO public.iu_route_attempt (event_ref, worker_name, route_key, route_kind, status, idempotency_key, event_txid)
            SELECT d.id, p_worker_name, d.route_key, d.route_kind, d.decision,
                   iu_core.fn_iu_route_idempotency_key(p_worker_name, d.route_key, d.id), d.txid
              FROM decided d
             WHERE d.decision <> 'deliver'
        )
        SELECT a.n, a.n_dry, a.n_disabled, a.n_skipped,
               l.txid, l.id, l.created_at,
               a.ids, a.keys, a.kinds
          INTO v_page, k_dry, k_disabled, k_skipped,
               l_txid, l_id, l_created,
               t.deliver_ids, t.deliver_route_keys, t.deliver_route_kinds
          FROM (SELECT count(*) AS n,
                       count(*) FILTER (WHERE d.decision = 'dry_run')  AS n_dry,
                       count(*) FILTER (WHERE d.decision = 'disabled') AS n_disabled,
                       count(*) FILTER (WHERE d.decision = 'skipped')  AS n_skipped,
                       array_agg(d.id ORDER BY d.txid, d.id)         FILTER (WHERE d.decision = 'deliver') AS ids,
                       array_agg(d.route_key ORDER BY d.txid, d.id)  FILTER (WHERE d.decision = 'deliver') AS keys,
                       array_agg(d.route_kind ORDER BY d.txid, d.id) FILTER (WHERE d.decision = 'deliver') AS kinds
                  FROM decided d) a
          LEFT JOIN LATERAL (SELECT d.txid, d.id, d.created_at FROM decided d
                              ORDER BY d.txid DESC, d.id DESC LIMIT 1) l ON true;
    ELSE
        -- A re-scan: existing keys are skipped and counted as already attempted.
        WITH decided AS MATERIALIZED (
            SELECT * FROM iu_core.fn_iu_route_worker_page(p_event_domain, p_pos, p_limit)
        ), ins AS (
            INSERT INTO public.iu_route_attempt (event_ref, worker_name, route_key, route_kind, status, idempotency_key, event_txid)
            SELECT d.id, p_worker_name, d.route_key, d.route_kind, d.decision,
                   iu_core.fn_iu_route_idempotency_key(p_worker_name, d.route_key, d.id), d.txid
              FROM decided d
             WHERE d.decision <> 'deliver'
            ON CONFLICT DO NOTHING
            RETURNING status
        )
        SELECT (SELECT count(*) FROM decided),
               i.n_dry, i.n_disabled, i.n_skipped,
               l.txid, l.id, l.created_at,
               dv.ids, dv.keys, dv.kinds
          INTO v_page, k_dry, k_disabled, k_skipped,
               l_txid, l_id, l_created,
               t.deliver_ids, t.deliver_route_keys, t.deliver_route_kinds
          FROM (SELECT count(*) FILTER (WHERE ins.status = 'dry_run')  AS n_dry,
                       count(*) FILTER (WHERE ins.status = 'disabled') AS n_disabled,
                       count(*) FILTER (WHERE ins.status = 'skipped')  AS n_skipped
                  FROM ins) i
          CROSS JOIN (SELECT array_agg(d.id ORDER BY d.txid, d.id)         AS ids,
                             array_agg(d.route_key ORDER BY d.txid, d.id)  AS keys,
                             array_agg(d.route_kind ORDER BY d.txid, d.id) AS kinds
                        FROM decided d WHERE d.decision = 'deliver') dv
          LEFT JOIN LATERAL (SELECT d.txid, d.id, d.created_at FROM decided d
                              ORDER BY d.txid DESC, d.id DESC LIMIT 1) l ON true;
    END IF;

    t.claimed           := t.claimed + v_page;
    t.dry_run           := t.dry_run + k_dry;
    t.disabled          := t.disabled + k_disabled;
    t.skipped           := t.skipped + k_skipped;
    t.attempts_written  := t.attempts_written + k_dry + k_disabled + k_skipped;
    t.already_attempted := t.already_attempted + v_page - coalesce(array_length(t.deliver_ids, 1), 0)
                           - (k_dry + k_disabled + k_skipped);
    IF v_page > 0 THEN
        t.last_txid := l_txid; t.last_id := l_id; t.last_created_at := l_created;
    END IF;
    RETURN t;
END;
$$;
