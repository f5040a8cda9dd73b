CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_pass(p_worker_name text, p_batch_limit integer, p_lock_id integer DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_pass(p_worker_name, p_batch_limit, p_lock_id) -> jsonb summary: the
    -- full pass of fn_iu_route_worker_run, for every run its idle path does not answer.
    -- Internal (nobody but the owner may execute it); it runs inside the run, under its
    -- pinned search_path and plan_cache_mode, after its batch-limit check; it checks the
    -- worker name first. p_lock_id: the worker's lock id as the idle probe read it (NULL:
    -- look it up); a lock id is the cursor's for life, and the one locked is checked against
    -- the row read under it.
    --   1. the worker's advisory lock, without waiting: when another run holds it,
    --      {"busy": true} at once (no wait, no beat: the run holding it beats); not registered:
    --      P0002 with the register call as HINT. A member of a group (its cursor's
    --      group_name) goes on in fn_iu_route_group_pass, and may take over an orphaned
    --      member when it has nothing to do (fn_iu_route_group_takeover)
    --   2. the cursor, both gates, its sanity and whether a route of its domain delivers, in
    --      one statement under the lock;
    --      the dual fail-closed gate (master AND worker): closed -> {"gated": true, "reason"},
    --      nothing claimed, the cursor untouched, the heartbeat beaten (an invoked worker is alive)
    --   3. cursor sanity and foreign event rows (IU002, with the fix as HINT)
    --   4. pages until the batch is full or the windows are exhausted: decide_page (or
    --      decide_each when the page statement fails), then deliver_page. With no route of
    --      the domain deciding deliver, the page is the INSERT straight from the claim
    --      (decide_page's p_deliverable)
    --   5. idle (nothing claimed, no window was open): nothing written but a due heartbeat
    --      (and, once after a history partition closed, the position moved up to the empty
    --      window, so the idle path can answer the next polls);
    --      otherwise fn_iu_route_worker_advance: the cursor, the counters, the heartbeat
    -- ---------------------------------------------------------------------------------------
DECLARE
    c              public.iu_route_worker_cursor%ROWTYPE;
    t              iu_core.iu_route_run_tally := iu_core.fn_iu_route_run_tally_zero();
    v_routes_on    boolean;
    v_worker_on    boolean;
    v_reason       text;
    v_problem      text;
    v_foreign      boolean;
    -- The position: done, the open window and the keyset inside it, one value passed to
    -- the claim and the page functions.
    v_pos          iu_core.iu_route_window;
    v_done_moved   boolean := false;
    v_opened_here  boolean := false;
    v_before       integer;
    v_page         integer;
    v_page_limit   integer;
    v_fallback_err text;
    v_page_err     text;
    v_guarded      boolean := false;   -- a key existed: pages of this run are written guarded
    v_page_done    boolean;
    v_opened       integer := 0;
    v_closed       integer := 0;
    v_state        text;
    v_msg          text;
    v_holders      jsonb;
    v_summary      jsonb;
    v_deliverable  boolean;
    v_locked       integer := p_lock_id;
    v_start        record;           -- the cursor and what the run decides by, read under the lock
BEGIN
    -- The worker-name rule as an expression (no statement); it raises, naming the fault,
    -- only for a name that breaks it.
    IF NOT iu_core.fn_iu_route_worker_name_ok(p_worker_name) THEN
        PERFORM iu_core.fn_iu_route_worker_require_name('fn_iu_route_worker_run', p_worker_name);
    END IF;
    -- One run per worker at a time: a second run never waits, it reports busy.
    -- The answer names who holds the lock: a run in progress, a reset, or any session that
    -- took the worker's advisory lock (no grant needed for that). With the lock id the probe
    -- read, the lock is one expression; without it (or when it is taken), the lookup and
    -- the busy answer below.
    IF v_locked IS NULL OR NOT iu_core.fn_iu_route_worker_try_lock(v_locked) THEN
        v_locked := NULL;
    END IF;
    IF v_locked IS NULL AND NOT iu_core.fn_iu_route_worker_lock('fn_iu_route_worker_run', p_worker_name, false) THEN
        v_summary := jsonb_build_object('worker', p_worker_name, 'gated', false, 'busy', true,
                                  'reason', 'another session holds this worker''s lock (a run in progress, a reset, or a session that took its advisory lock)',
                                  'lock_held_by', iu_core.fn_iu_route_worker_lock_holders(
                                      (SELECT cur.lock_id FROM public.iu_route_worker_cursor cur WHERE cur.worker_name = p_worker_name)),
                                  'claimed', 0, 'attempts_written', 0, 'dead_lettered', 0,
                                  'dry_run', 0, 'disabled', 0, 'skipped', 0, 'failed', 0, 'sent', 0);
        -- A group member whose lock another session holds: its runner may route for an
        -- orphaned member of its group instead (fn_iu_route_group_takeover).
        IF EXISTS (SELECT 1 FROM public.iu_route_worker_cursor cur WHERE cur.worker_name = p_worker_name AND cur.group_name IS NOT NULL) THEN
            RETURN iu_core.fn_iu_route_group_takeover(p_worker_name, p_batch_limit, v_summary);
        END IF;
        RETURN v_summary;
    END IF;
    -- Under the lock, one statement reads what the run needs to decide: the cursor, both
    -- gates (as fn_iu_core_routes_enabled and fn_iu_route_worker_enabled read them), the
    -- cursor sanity rule and the probe for rows from another cluster (both internals inlined
    -- here), and whether a route of the domain decides deliver (fn_iu_route_decide).
    SELECT cur AS cursor_row,
           public.fn_iu_gate_open((SELECT g.value FROM public.dot_config g WHERE g.key = 'iu_core.routes_enabled')) AS routes_on,
           public.fn_iu_gate_open((SELECT g.value FROM public.dot_config g WHERE g.key = 'iu_core.route_worker_enabled')) AS worker_on,
           (SELECT k FROM iu_core.fn_iu_route_worker_cursor_check(cur) k LIMIT 1) AS problem,
           EXISTS (SELECT 1 FROM iu_core.fn_iu_route_worker_foreign_rows(cur.event_domain)) AS foreign_rows,
           EXISTS (SELECT 1 FROM public.iu_outbound_route r
                    WHERE r.event_domain = cur.event_domain
                      AND iu_core.fn_iu_route_decide(r.route_key, r.enabled, r.dry_run) = 'deliver') AS deliverable
      INTO v_start
      FROM public.iu_route_worker_cursor cur WHERE cur.worker_name = p_worker_name;
    IF NOT FOUND THEN
        -- removed between the lock's lookup and the lock (a group member that left)
        PERFORM iu_core.fn_iu_route_worker_not_registered('fn_iu_route_worker_run', p_worker_name);
    END IF;
    c             := v_start.cursor_row;
    v_routes_on   := v_start.routes_on;
    v_worker_on   := v_start.worker_on;
    v_problem     := v_start.problem;
    v_foreign     := v_start.foreign_rows;
    v_deliverable := v_start.deliverable;
    IF v_locked IS NOT NULL AND v_locked <> c.lock_id THEN
        -- The worker was removed and registered again since the probe read its lock id: the
        -- lock taken is not this cursor's. Take this one's (or answer busy from the full path).
        RETURN iu_core.fn_iu_route_worker_pass(p_worker_name, p_batch_limit, NULL);
    END IF;
    -- A member of a group routes only its buckets, under the group's name
    -- (fn_iu_route_group_pass); when it has nothing to do, its runner may route for an
    -- orphaned member of the group (fn_iu_route_group_takeover).
    IF c.group_name IS NOT NULL THEN
        v_summary := iu_core.fn_iu_route_group_pass(p_worker_name, c, p_batch_limit);
        IF (v_summary->>'idle')::boolean AND (v_summary->>'rebalance_settled')::boolean IS NOT TRUE THEN
            RETURN iu_core.fn_iu_route_group_takeover(p_worker_name, p_batch_limit, v_summary);
        END IF;
        RETURN v_summary;
    END IF;

    -- Dual fail-closed gate. A gated run is a clean no-op that still beats the heartbeat.
    IF NOT (v_routes_on AND v_worker_on) THEN
        v_reason := CASE WHEN NOT v_routes_on AND NOT v_worker_on THEN 'master_and_worker_gates_closed'
                         WHEN NOT v_routes_on THEN 'master_gate_closed'
                         ELSE 'worker_gate_closed' END;
        PERFORM iu_core.fn_iu_route_worker_beat(p_worker_name, c.event_domain,
                                        jsonb_build_object('gated', true, 'reason', v_reason));
        RETURN jsonb_build_object('worker', p_worker_name, 'event_domain', c.event_domain,
                                  'gated', true, 'busy', false, 'reason', v_reason,
                                  'gates', jsonb_build_object('iu_core.routes_enabled', v_routes_on,
                                                              'iu_core.route_worker_enabled', v_worker_on),
                                  'claimed', 0, 'attempts_written', 0, 'dead_lettered', 0,
                                  'dry_run', 0, 'disabled', 0, 'skipped', 0, 'failed', 0, 'sent', 0);
    END IF;

    -- Cursor sanity (the stored position must belong to this cluster) and rows restored
    -- from another cluster, as read above.
    IF v_problem IS NOT NULL THEN
        RAISE EXCEPTION 'fn_iu_route_worker_run: %', v_problem
            USING ERRCODE = 'IU002',
                  HINT = format('The cursor comes from another cluster (dump/restore?). Re-anchor it: SELECT fn_iu_route_worker_reset_cursor(%L); the re-scan writes no duplicate attempts (idempotency keys).', p_worker_name);
    END IF;
    -- Rows restored from another cluster would stay invisible to every window: refuse and say so.
    IF v_foreign THEN
        RAISE EXCEPTION 'fn_iu_route_worker_run: event_outbox holds % rows whose transaction ids come from another cluster (dump/restore?)',
            quote_literal(c.event_domain)
            USING ERRCODE = 'IU002',
                  HINT = 'Re-stamp them: SELECT fn_iu_event_outbox_rebase_foreign_txids(); they are routed as one new window (duplicate-free: idempotency keys). If the cursor is foreign too, also SELECT fn_iu_route_worker_reset_cursor(...).';
    END IF;

    v_pos := ROW(coalesce(c.done_snapshot, '1:1:'::pg_snapshot), c.window_snapshot, c.window_txid, c.window_event_id);

    LOOP
        IF v_pos.window_snapshot IS NULL THEN
            -- A fresh window: everything committed as of this statement.
            v_pos.window_snapshot := iu_core.fn_iu_route_worker_snapshot();
            v_opened_here := true;
            v_opened      := v_opened + 1;
            v_pos.after_txid      := NULL;
            v_pos.after_id        := NULL;
        END IF;
        v_page_limit := p_batch_limit - t.claimed;
        v_before     := t.claimed;

        IF v_opened_here AND v_pos.after_txid IS NULL
           AND NOT EXISTS (SELECT 1 FROM iu_core.fn_iu_route_worker_claim(c.event_domain, ROW(v_pos.done_snapshot, v_pos.window_snapshot, NULL, NULL)::iu_core.iu_route_window, 1)) THEN
            -- The first page of a window this run opened, and the window holds nothing (the
            -- caught-up poll): one probe of the claim instead of the page statement and its
            -- subtransaction. The empty window closes below, as a short page.
            NULL;
        ELSE
            -- The common path: the whole page decided and audited in one statement (one
            -- subtransaction), a plain INSERT. Should a key of the page exist already (a
            -- re-scan after a cursor reset or a rebase), the page again with existing keys
            -- skipped, and guarded for the rest of this run (a re-scan rarely ends after
            -- one page). Should the page fail otherwise, the page again, one event per block.
            v_page_err  := NULL;
            v_page_done := false;
            IF NOT v_guarded THEN
                BEGIN
                    t := iu_core.fn_iu_route_worker_decide_page(t, p_worker_name, c.event_domain, v_pos, v_page_limit, false, v_deliverable);
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
                    t := iu_core.fn_iu_route_worker_decide_page(t, p_worker_name, c.event_domain, v_pos, v_page_limit, true);
                EXCEPTION WHEN OTHERS THEN
                    GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
                    v_page_err := v_state || ': ' || v_msg;
                END;
            END IF;
            IF v_page_err IS NOT NULL THEN
                v_fallback_err := v_page_err;
                t := iu_core.fn_iu_route_worker_decide_each(t, p_worker_name, c.event_domain, v_pos, v_page_limit);
            END IF;
            IF cardinality(t.deliver_ids) > 0 THEN
                t := iu_core.fn_iu_route_worker_deliver_page(t, p_worker_name);
            END IF;
        END IF;

        v_page := t.claimed - v_before;
        IF v_page > 0 THEN
            v_pos.after_txid := t.last_txid;
            v_pos.after_id   := t.last_id;
        END IF;
        IF v_page < v_page_limit THEN
            -- A short page: the window is exhausted and becomes the done snapshot.
            v_pos.done_snapshot   := v_pos.window_snapshot;
            v_done_moved := true;
            v_pos.window_snapshot := NULL;
            v_pos.after_txid      := NULL;
            v_pos.after_id        := NULL;
            v_closed     := v_closed + 1;
            -- Open one more window only if this run did not open the one just closed.
            EXIT WHEN v_opened_here OR t.claimed >= p_batch_limit;
        ELSE
            EXIT; -- the batch is full; the window stays open at (v_pos.after_txid, v_pos.after_id)
        END IF;
    END LOOP;

    -- Who the position waits on: the in-progress transactions of the done and window
    -- snapshots stored after this run. An idle run stores nothing, so its position is
    -- still the cursor's done snapshot.
    v_holders := CASE WHEN t.claimed = 0 AND c.window_snapshot IS NULL
                      THEN iu_core.fn_iu_route_worker_holders(c.done_snapshot, NULL)
                      ELSE iu_core.fn_iu_route_worker_holders(v_pos.done_snapshot, v_pos.window_snapshot) END;
    v_summary := iu_core.fn_iu_route_worker_summary(p_worker_name, c.event_domain, p_batch_limit, t,
                                            v_pos.window_snapshot IS NOT NULL, v_opened, v_closed, v_fallback_err,
                                            t.claimed = 0 AND c.window_snapshot IS NULL, v_holders);

    IF t.claimed = 0 AND c.window_snapshot IS NULL THEN
        -- Idle: nothing claimed and no window was open, so the position is unchanged (the
        -- empty window just opened and closed adds nothing: the rows not visible in it are
        -- exactly the rows not visible in done). Write nothing but a due heartbeat, so idle
        -- polling neither consumes transaction ids nor leaves dead row versions behind.
        IF EXISTS (SELECT 1 FROM iu_core.fn_iu_route_worker_beat_due(p_worker_name, NULL)) THEN
            PERFORM iu_core.fn_iu_route_worker_beat(p_worker_name, c.event_domain,
                jsonb_build_object('claimed', 0, 'attempts_written', 0, 'dead_lettered', 0, 'caught_up', true,
                                   'held_open_count', jsonb_array_length(v_holders)));
        END IF;
        -- A position below the outbox's hot bound (a partition closed since this worker last
        -- moved it; fn_iu_outbox_hot_txid) sends every idle run here, since the idle path's
        -- question cannot answer for it: move it up to the empty window just closed (the
        -- claim found nothing between the two), once, so the next polls take the idle path.
        -- The only write of an idle run besides a due beat, once per closed partition.
        IF pg_snapshot_xmin(coalesce(c.done_snapshot, '1:1:'::pg_snapshot)) < iu_core.fn_iu_outbox_hot_txid(c.event_domain)
           AND pg_snapshot_xmin(v_pos.done_snapshot) >= iu_core.fn_iu_outbox_hot_txid(c.event_domain) THEN
            UPDATE public.iu_route_worker_cursor cur SET done_snapshot = v_pos.done_snapshot
             WHERE cur.worker_name = p_worker_name;
        END IF;
        RETURN v_summary;
    END IF;
    PERFORM iu_core.fn_iu_route_worker_advance(p_worker_name, c.event_domain,
                                       CASE WHEN v_done_moved THEN v_pos.done_snapshot END,
                                       v_pos.window_snapshot, v_pos.after_txid, v_pos.after_id, t, v_summary);
    RETURN v_summary;
END;
$$;
