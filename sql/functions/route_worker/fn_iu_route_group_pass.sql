CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_group_pass(p_runner text, p_cursor public.iu_route_worker_cursor, p_batch_limit integer)
RETURNS jsonb
LANGUAGE plpgsql
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_group_pass(p_runner, p_cursor, p_batch_limit) -> jsonb summary: one pass of
    -- a group member, fn_iu_route_worker_pass's loop with three differences. Internal; called
    -- with the member's lock held and its cursor row read under it, by fn_iu_route_worker_pass
    -- (p_runner = the member run) or by fn_iu_route_group_takeover (p_runner = the member
    -- whose runner took over p_cursor's member).
    --   1. Only the member's own buckets are routed, audited under the group's name
    --      (fn_iu_route_group_decide_page); claimed counts the member's own events. The
    --      claim skips the other members' events inside its index scans (each costs the
    --      index entry, the heap fetch, the visibility test and the hash, and no more), so a
    --      page is the next rows of the member's buckets in the window, plus the others'
    --      waypoints (about 1 in 64, fn_iu_route_group_claims), which are read past: they
    --      move the keyset as its own events do and bound what one page skips to about 64 x
    --      its limit. A page short of its limit therefore means the window holds nothing
    --      more of the member's: done := window, exactly as for a worker. The batch counts
    --      the rows the pages return (its own events and waypoints), as a worker's does: a
    --      member's run routes about as many events as a worker's run of that batch, so the
    --      run's own cost (its statements, its advance) is spread over as many writes.
    --   2. While a rebalance is pending (the group's boundary_snapshot), every window the
    --      member opens is cut at the boundary, so its done_snapshot reaches exactly the
    --      boundary and stops there: it has then routed every event of its current buckets
    --      that the boundary sees. A member at the boundary routes nothing until every member
    --      is there; the run that finds them all there settles the hand-over
    --      (fn_iu_route_group_settle): each member's next buckets become its buckets, for
    --      the rows the boundary does not see. So an event is routed by the owner of its
    --      bucket on its side of the boundary (once), and a stream that changes owner is
    --      routed by the new owner only after the old one committed all of it up to the
    --      boundary (in order).
    --   3. The heartbeat beaten is the runner's (its process is alive), never that of a
    --      member taken over: a member whose runner is gone stays silent and is alerted on.
    --      And only while this transaction holds the runner's own lock: a runner whose member
    --      answered busy (another session holds that member's lock) may still route for an
    --      orphan, but that is not its member's work, and a beat would keep the member fresh
    --      while its buckets go unrouted behind whoever holds the lock.
    --   4. A run waiting at the boundary beats nothing while the settle is blocked: a leaving
    --      member at the boundary has nothing left to route, so a session holding its lock
    --      (a run of it at the boundary holds it for milliseconds) halts the whole group.
    --      The members then go stale and are alerted on, and the answer names the holders
    --      (settle_blocked_by: each such member and the sessions holding its lock).
    -- Gates, cursor sanity (IU002), the page loop and its fallbacks, and the idle rule are
    -- the worker's, with the same answers.
    -- ---------------------------------------------------------------------------------------
DECLARE
    c              public.iu_route_worker_cursor := p_cursor;
    g              public.iu_route_group%ROWTYPE;
    m              public.iu_route_group_member%ROWTYPE;
    t              iu_core.iu_route_run_tally := iu_core.fn_iu_route_run_tally_zero();
    v_routes_on    boolean;
    v_worker_on    boolean;
    v_reason       text;
    v_problem      text;
    v_foreign      boolean;
    v_pos          iu_core.iu_route_window;
    v_cap          pg_snapshot;        -- the pending boundary: windows are cut at it
    v_settled      boolean := false;   -- this run settled the hand-over
    v_done_moved   boolean := false;
    v_opened_here  boolean := false;
    v_read         integer := 0;       -- rows the pages read: own events and waypoints (the batch counts them)
    v_held         boolean := false;   -- a window of this run held rows (its own or not): the position moves
    v_page         integer;
    v_page_limit   integer;
    v_fallback_err text;
    v_page_err     text;
    v_guarded      boolean := false;
    v_page_done    boolean;
    v_beats        boolean;            -- the runner's heartbeat may be beaten (rule 3)
    v_blocked      jsonb;              -- leaving members at the boundary whose lock is held (rule 4)
    v_opened       integer := 0;
    v_closed       integer := 0;
    v_state        text;
    v_msg          text;
    v_holders      jsonb;
    v_summary      jsonb;
    v_idle         boolean;
    v_res          record;             -- a page's (tally, n_read)
BEGIN
    SELECT * INTO g FROM public.iu_route_group gr WHERE gr.group_name = c.group_name;
    SELECT * INTO m FROM public.iu_route_group_member gm WHERE gm.member_name = c.worker_name;
    -- Rule 3. Taking a lock this transaction already holds succeeds, one another session
    -- holds fails (a free one is taken: the runner's member then waits for this run).
    v_beats := c.worker_name = p_runner
               OR iu_core.fn_iu_route_worker_try_lock((SELECT cur.lock_id FROM public.iu_route_worker_cursor cur
                                                        WHERE cur.worker_name = p_runner)) IS TRUE;

    v_routes_on := public.fn_iu_core_routes_enabled() IS TRUE;
    v_worker_on := public.fn_iu_route_worker_enabled() IS TRUE;
    IF NOT (v_routes_on AND v_worker_on) THEN
        v_reason := CASE WHEN NOT v_routes_on AND NOT v_worker_on THEN 'master_and_worker_gates_closed'
                         WHEN NOT v_routes_on THEN 'master_gate_closed'
                         ELSE 'worker_gate_closed' END;
        IF v_beats THEN
            PERFORM iu_core.fn_iu_route_worker_beat(p_runner, c.event_domain,
                                                    jsonb_build_object('gated', true, 'reason', v_reason));
        END IF;
        RETURN jsonb_build_object('worker', p_runner, 'event_domain', c.event_domain,
                                  'gated', true, 'busy', false, 'reason', v_reason,
                                  'gates', jsonb_build_object('iu_core.routes_enabled', v_routes_on,
                                                              'iu_core.route_worker_enabled', v_worker_on),
                                  'claimed', 0, 'attempts_written', 0, 'dead_lettered', 0,
                                  'dry_run', 0, 'disabled', 0, 'skipped', 0, 'failed', 0, 'sent', 0,
                                  'group', g.group_name, 'member', c.worker_name, 'took_over', c.worker_name <> p_runner);
    END IF;

    SELECT (SELECT k FROM iu_core.fn_iu_route_worker_cursor_check(c) k LIMIT 1),
           EXISTS (SELECT 1 FROM iu_core.fn_iu_route_worker_foreign_rows(c.event_domain))
      INTO v_problem, v_foreign;
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION 'fn_iu_route_worker_run: %', v_problem
            USING ERRCODE = 'IU002',
                  HINT = format('The cursor comes from another cluster (dump/restore?). Re-anchor it: SELECT fn_iu_route_worker_reset_cursor(%L); the re-scan writes no duplicate attempts (idempotency keys).', c.worker_name);
    END IF;
    IF v_foreign THEN
        RAISE EXCEPTION 'fn_iu_route_worker_run: event_outbox holds % rows whose transaction ids come from another cluster (dump/restore?)',
            quote_literal(c.event_domain)
            USING ERRCODE = 'IU002',
                  HINT = 'Re-stamp them: SELECT fn_iu_event_outbox_rebase_foreign_txids(); they are routed as one new window (duplicate-free: idempotency keys). If the cursor is foreign too, also SELECT fn_iu_route_worker_reset_cursor(...).';
    END IF;

    IF g.boundary_snapshot IS NOT NULL THEN
        -- A pending hand-over. A member at the boundary (or every member at the start of the
        -- stream) tries to settle it; one that cannot waits, writing nothing but a due beat.
        IF (c.window_snapshot IS NULL AND c.done_snapshot::text = g.boundary_snapshot::text)
           OR NOT EXISTS (SELECT 1 FROM public.iu_route_worker_cursor o
                           WHERE o.group_name = g.group_name
                             AND (o.done_snapshot IS NOT NULL OR o.window_snapshot IS NOT NULL)) THEN
            v_settled := iu_core.fn_iu_route_group_settle(g.group_name);
            IF NOT v_settled THEN
                -- Rule 4 (the settle took the leaving members' locks in this order and gave
                -- up at the first held one; the rest are tried here the same way).
                SELECT coalesce(jsonb_agg(jsonb_build_object('member', lc.worker_name,
                                                             'lock_held_by', iu_core.fn_iu_route_worker_lock_holders(lc.lock_id))
                                          ORDER BY lc.lock_id), '[]'::jsonb)
                  INTO v_blocked
                  FROM public.iu_route_group_member gm
                  JOIN public.iu_route_worker_cursor lc ON lc.worker_name = gm.member_name
                 WHERE lc.group_name = g.group_name AND gm.leaving
                   AND lc.window_snapshot IS NULL AND lc.done_snapshot::text = g.boundary_snapshot::text
                   AND NOT iu_core.fn_iu_route_worker_try_lock(lc.lock_id);
                IF v_beats AND jsonb_array_length(v_blocked) = 0
                   AND EXISTS (SELECT 1 FROM iu_core.fn_iu_route_worker_beat_due(p_runner, NULL)) THEN
                    PERFORM iu_core.fn_iu_route_worker_beat(p_runner, c.event_domain,
                        jsonb_build_object('claimed', 0, 'attempts_written', 0, 'dead_lettered', 0, 'caught_up', true,
                                           'waiting_for_rebalance', true));
                END IF;
                RETURN iu_core.fn_iu_route_worker_summary(p_runner, c.event_domain, p_batch_limit,
                                                          iu_core.fn_iu_route_run_tally_zero(), false, 0, 0, NULL, true, '[]'::jsonb)
                    || iu_core.fn_iu_route_group_summary(g, m, c.worker_name <> p_runner, false)
                    || jsonb_build_object('waiting_for_rebalance', true)
                    || CASE WHEN jsonb_array_length(v_blocked) > 0
                            THEN jsonb_build_object('settle_blocked_by', v_blocked) ELSE '{}'::jsonb END;
            END IF;
            SELECT * INTO g FROM public.iu_route_group gr WHERE gr.group_name = c.group_name;
            SELECT * INTO m FROM public.iu_route_group_member gm WHERE gm.member_name = c.worker_name;
            IF m.member_name IS NULL THEN
                -- it left with this settle: nothing more to route
                RETURN iu_core.fn_iu_route_worker_summary(p_runner, c.event_domain, p_batch_limit,
                                                          iu_core.fn_iu_route_run_tally_zero(), false, 0, 0, NULL, true, '[]'::jsonb)
                    || jsonb_build_object('group', g.group_name, 'member', c.worker_name, 'took_over', c.worker_name <> p_runner,
                                          'rebalance_settled', true, 'left_group', true);
            END IF;
        END IF;
        v_cap := g.boundary_snapshot;
    END IF;

    v_pos := ROW(coalesce(c.done_snapshot, '1:1:'::pg_snapshot), c.window_snapshot, c.window_txid, c.window_event_id);

    LOOP
        IF v_pos.window_snapshot IS NULL THEN
            -- A fresh window: everything committed now, or the boundary while one is pending.
            v_pos.window_snapshot := coalesce(v_cap, iu_core.fn_iu_route_worker_snapshot());
            v_opened_here := true;
            v_opened      := v_opened + 1;
            v_pos.after_txid      := NULL;
            v_pos.after_id        := NULL;
        END IF;
        v_page_limit := p_batch_limit - v_read;

        -- The probe asks for any row of the domain (no buckets): a window that holds only
        -- the others' events is not empty, and the position that passes them is written
        -- (an idle run writes nothing, and would read them again on every poll).
        IF v_opened_here AND v_pos.after_txid IS NULL
           AND NOT EXISTS (SELECT 1 FROM iu_core.fn_iu_route_worker_claim(c.event_domain, ROW(v_pos.done_snapshot, v_pos.window_snapshot, NULL, NULL)::iu_core.iu_route_window, 1)) THEN
            v_page := 0;    -- an empty window this run opened: it closes below
        ELSE
            v_held := true;
            v_page_err  := NULL;
            v_page_done := false;
            IF NOT v_guarded THEN
                BEGIN
                    SELECT r.tally, r.n_read INTO v_res
                      FROM iu_core.fn_iu_route_group_decide_page(t, g.group_name, c.event_domain, v_pos, v_page_limit,
                                                                m.bucket_lo, m.bucket_hi, false) r;
                    t := v_res.tally; v_page := v_res.n_read;
                    v_page_done := true;
                EXCEPTION
                    WHEN unique_violation THEN
                        v_guarded := true;
                    WHEN OTHERS THEN
                        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
                        v_page_err := v_state || ': ' || v_msg;
                END;
            END IF;
            IF v_guarded AND NOT v_page_done THEN
                BEGIN
                    SELECT r.tally, r.n_read INTO v_res
                      FROM iu_core.fn_iu_route_group_decide_page(t, g.group_name, c.event_domain, v_pos, v_page_limit,
                                                                m.bucket_lo, m.bucket_hi, true) r;
                    t := v_res.tally; v_page := v_res.n_read;
                EXCEPTION WHEN OTHERS THEN
                    GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
                    v_page_err := v_state || ': ' || v_msg;
                END;
            END IF;
            IF v_page_err IS NOT NULL THEN
                v_fallback_err := v_page_err;
                SELECT r.tally, r.n_read INTO v_res
                  FROM iu_core.fn_iu_route_group_decide_each(t, g.group_name, c.event_domain, v_pos, v_page_limit,
                                                            m.bucket_lo, m.bucket_hi) r;
                t := v_res.tally; v_page := v_res.n_read;
            END IF;
            IF cardinality(t.deliver_ids) > 0 THEN
                t := iu_core.fn_iu_route_worker_deliver_page(t, g.group_name);
            END IF;
        END IF;

        v_read := v_read + v_page;
        IF v_page > 0 THEN
            v_pos.after_txid := t.last_txid;
            v_pos.after_id   := t.last_id;
        END IF;
        IF v_page < v_page_limit THEN
            v_pos.done_snapshot   := v_pos.window_snapshot;
            v_done_moved := true;
            v_pos.window_snapshot := NULL;
            v_pos.after_txid      := NULL;
            v_pos.after_id        := NULL;
            v_closed     := v_closed + 1;
            -- At the boundary: no window beyond it while the hand-over is pending.
            EXIT WHEN v_opened_here OR v_read >= p_batch_limit
                      OR (v_cap IS NOT NULL AND v_pos.done_snapshot::text = v_cap::text);
        ELSE
            EXIT;
        END IF;
    END LOOP;

    -- Idle as for a worker (no window was open and the one opened held no row at all),
    -- unless the window just closed was the boundary: reaching it must be written.
    v_idle := NOT v_held AND c.window_snapshot IS NULL
              AND NOT (v_cap IS NOT NULL AND c.done_snapshot::text IS DISTINCT FROM v_cap::text);
    v_holders := CASE WHEN v_idle
                      THEN iu_core.fn_iu_route_worker_holders(c.done_snapshot, NULL)
                      ELSE iu_core.fn_iu_route_worker_holders(v_pos.done_snapshot, v_pos.window_snapshot) END;
    v_summary := iu_core.fn_iu_route_worker_summary(p_runner, c.event_domain, p_batch_limit, t,
                                                    v_pos.window_snapshot IS NOT NULL, v_opened, v_closed, v_fallback_err,
                                                    v_idle, v_holders)
              || iu_core.fn_iu_route_group_summary(g, m, c.worker_name <> p_runner, v_settled);

    IF v_idle THEN
        IF v_beats AND EXISTS (SELECT 1 FROM iu_core.fn_iu_route_worker_beat_due(p_runner, NULL)) THEN
            PERFORM iu_core.fn_iu_route_worker_beat(p_runner, c.event_domain,
                jsonb_build_object('claimed', 0, 'attempts_written', 0, 'dead_lettered', 0, 'caught_up', true,
                                   'held_open_count', jsonb_array_length(v_holders)));
        END IF;
        RETURN v_summary;
    END IF;
    PERFORM iu_core.fn_iu_route_worker_advance(c.worker_name, c.event_domain,
                                               CASE WHEN v_done_moved THEN v_pos.done_snapshot END,
                                               v_pos.window_snapshot, v_pos.after_txid, v_pos.after_id, t, v_summary,
                                               g.group_name, p_runner, v_beats);
    -- The last member to reach the boundary settles the hand-over in its own run.
    IF v_cap IS NOT NULL AND v_pos.window_snapshot IS NULL AND v_pos.done_snapshot::text = v_cap::text
       AND iu_core.fn_iu_route_group_settle(g.group_name) THEN
        v_summary := v_summary || jsonb_build_object('rebalance_settled', true);
    END IF;
    RETURN v_summary;
END;
$$;
