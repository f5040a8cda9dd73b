-- 009_route_worker_functions.sql
--
-- Adds the route worker: the functions that consume the iu domain of event_outbox into
-- iu_route_attempt (one audit row per event and route decision) and iu_route_dead_letter,
-- plus the operator surface (register, reset, replay, health) and three views.
--
--   fn_iu_route_worker_register(p_worker_name, p_event_domain)  cursor + PG_worker heartbeat
--   fn_iu_route_worker_run(p_worker_name, p_batch_limit)         one transactional pass
--   fn_iu_route_deliver(...)                                     delivery seam, fails closed (0A000)
--   fn_iu_route_dead_letter_replay(p_dead_letter_id)             re-attempt one dead letter
--   fn_iu_route_worker_reset_cursor(p_worker_name)               back to the start, re-anchored
--   fn_iu_route_worker_health(p_worker_name)                     gates, lag, backlog, holders
--   v_iu_route_worker_status, v_iu_route_dead_letter_open, v_iu_route_attempt_summary
--
-- Why the position is a pair of snapshots and not a (created_at, id) keyset
-- -------------------------------------------------------------------------
-- created_at is the inserting transaction's start time, so a transaction that commits late
-- lands behind a keyset that already moved on, and its rows are skipped. Reading only
-- txids below the cluster's xmin (watermill-sql) fixes that but lets any long transaction
-- anywhere stall every consumer. This worker batches like PgQ: the cursor stores
--   done_snapshot    a pg_snapshot; every row whose txid is visible in it has been routed
--                    (NULL = the start of the stream, read as '1:1:')
--   window_snapshot  the window being consumed: rows visible in it but not in done
--   (window_txid, window_event_id)  the keyset position inside the window
-- A window's rows are found by two bounded index range scans on event_outbox
-- (event_domain, txid, id):
--   (a) txid = each in-progress xid of done_snapshot that the window sees as completed
--   (b) pg_snapshot_xmax(done) <= txid < pg_snapshot_xmax(window), visible in window
-- paged by (txid, id). A page that comes back short exhausts the window: done := window,
-- and (when the run has capacity and did not open that window itself) a new window is
-- opened with pg_current_snapshot(). Every row of a window is committed before the claim
-- statement's own snapshot is taken (READ COMMITTED: each statement gets a fresh one), so
-- the claim sees all of them. A transaction still running when a window is taken stays in
-- done_snapshot's xip list; when it commits, branch (a) picks its rows up. So a late commit
-- is never skipped, and a long transaction holds back only its own rows.
--
-- Per-event isolation without a subtransaction per event: the dry_run / disabled / skipped
-- decisions of a whole page are one INSERT ... SELECT ... ON CONFLICT DO NOTHING inside a
-- single exception block (one subtransaction per page). Only events that reach the
-- delivery seam (route enabled, dry_run = false) get their own BEGIN ... EXCEPTION block.
-- Should the page statement fail, the page is redone event by event, each in its own block,
-- so one bad event still never aborts the batch.
--
-- A run, in order: arguments (22023); the cursor row locked FOR NO KEY UPDATE SKIP LOCKED
-- (not obtained: {"busy": true} at once, no wait, no heartbeat — the run holding it ticks;
-- no row: P0002); the gates (closed: {"gated": true, "reason": ...}, the cursor row left
-- untouched, the heartbeat ticked); cursor sanity (IU002); the windows; the cursor update
-- and the heartbeat tick, all in the caller's transaction.
--
-- Cursor sanity: transaction ids restart in another cluster (dump/restore), so stored
-- snapshots are meaningless there. The cursor records pg_control_system().system_identifier
-- at register and reset; a run refuses (IU002, class IU of this package: IU001 =
-- append-only violation, IU002 = cursor from another cluster) a cursor whose identifier
-- differs or whose snapshots lie ahead of this cluster's next xid. The documented fix is
-- SELECT fn_iu_route_worker_reset_cursor('<worker>'); the re-scan is duplicate-free.
--
-- JSON returned:
--   register  worker, event_domain, registered, created, cursor, system_identifier,
--             heartbeat_created, heartbeat{executor_id, executor_kind,
--             expected_cadence_seconds (60), stale_threshold_seconds (300)}
--   run       worker, event_domain, gated, busy, [reason], batch_limit, claimed,
--             attempts_written, dead_lettered, dry_run, disabled, skipped, failed, sent,
--             already_attempted (re-scanned, nothing written), caught_up, window_open,
--             windows_opened, windows_closed, fallback, [fallback_error], held_open_count,
--             held_open_by[{txid, pid, usename, application_name, state, xact_start,
--             xact_age_seconds, prepared_gid}], run_at
--   replay    replayed, dead_letter_id, idempotency_key, attempt_no, status, route_key,
--             resolved, resolution, resolved_by, failed_attempts, error_code, error_message;
--             or {replayed: false, reason: "already_resolved", ...}
--   reset     worker, reset, cursor, system_identifier, previous{...}, reset_by, note
--   health    per worker: worker, event_domain, gates, runs_total, last_run_at,
--             last_run_age_seconds, events_seen, attempts_written, dead_lettered, backlog,
--             oldest_pending_created_at, oldest_pending_age_seconds, open_dead_letters,
--             oldest_open_dead_letter_at, window_open, held_open_count, held_open_by,
--             cursor_ok, cursor_hint, heartbeat{...}, last_run_summary. With a worker name
--             that document is returned at the top level (plus checked_at and workers[]);
--             without one: {checked_at, gates, worker_count, workers[]}.
-- Actors (resolved_by, registered_by, reset_by): current_setting('app.actor') when set,
-- else session_user (inside SECURITY DEFINER current_user would be the owner).
--
-- SQLSTATEs: 22023 bad argument, P0002 unknown worker / dead letter, 0A000 the delivery
-- seam, IU002 a cursor recorded in another cluster (fix: fn_iu_route_worker_reset_cursor) or
-- event rows restored from one (fix: fn_iu_event_outbox_rebase_foreign_txids).
-- Grants: PUBLIC executes nothing; dot_executor and workflow_admin run the worker;
-- workflow_admin registers, resets, replays, reads health and the views.

-- +goose Up

-- ---------------------------------------------------------------------------------------
-- Internal: the claim. Inlinable SQL (no SECURITY DEFINER, no SET), so its body is planned
-- inside the caller's statement and EXPLAIN shows the two index range scans. It needs no
-- privileges of its own: nobody but the owner may execute it, and its only caller,
-- fn_iu_route_worker_run, is SECURITY DEFINER with search_path pinned.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_claim(
    p_event_domain text,
    p_done         pg_snapshot,
    p_window       pg_snapshot,
    p_after_txid   xid8,
    p_after_id     uuid,
    p_limit        integer
)
RETURNS TABLE (id uuid, txid xid8, event_type text, event_stream text, created_at timestamptz)
LANGUAGE sql STABLE
AS $$
    -- Each branch has exactly one lower bound per index column, so the btree starts AT the
    -- keyset position (a second lower bound, e.g. txid >= xmax(done) next to a row
    -- comparison, lets the scan start at the weaker one and wade through rows it skips).
    -- The position row itself is excluded by a plain filter.
    SELECT u.id, u.txid, u.event_type, u.event_stream, u.created_at
      FROM (
            -- (a) transactions in progress when done was taken, completed by the window:
            --     one probe per such xid, on (event_domain, txid = x, id >= ...)
            (SELECT e.id, e.txid, e.event_type, e.event_stream, e.created_at
               FROM pg_snapshot_xip(coalesce(p_done, '1:1:'::pg_snapshot)) AS x(xip_txid)
              CROSS JOIN LATERAL (
                    SELECT o.id, o.txid, o.event_type, o.event_stream, o.created_at
                      FROM event_outbox o
                     WHERE o.event_domain = p_event_domain
                       AND o.txid = x.xip_txid
                       AND o.id >= CASE WHEN x.xip_txid = p_after_txid THEN p_after_id
                                        ELSE '00000000-0000-0000-0000-000000000000'::uuid END
                       AND (x.xip_txid, o.id) IS DISTINCT FROM (p_after_txid, p_after_id)
                     ORDER BY o.id
                     LIMIT p_limit) e
              WHERE pg_visible_in_snapshot(x.xip_txid, p_window)
                AND (p_after_txid IS NULL OR x.xip_txid >= p_after_txid)
              ORDER BY e.txid, e.id
              LIMIT p_limit)
            UNION ALL
            -- (b) transactions that started after done and completed by the window:
            --     one range, from max(xmax(done), position) up to xmax(window)
            (SELECT o.id, o.txid, o.event_type, o.event_stream, o.created_at
               FROM event_outbox o
              WHERE o.event_domain = p_event_domain
                AND (o.txid, o.id) >= (
                        CASE WHEN p_after_txid >= pg_snapshot_xmax(coalesce(p_done, '1:1:'::pg_snapshot))
                             THEN p_after_txid
                             ELSE pg_snapshot_xmax(coalesce(p_done, '1:1:'::pg_snapshot)) END,
                        CASE WHEN p_after_txid >= pg_snapshot_xmax(coalesce(p_done, '1:1:'::pg_snapshot))
                             THEN p_after_id
                             ELSE '00000000-0000-0000-0000-000000000000'::uuid END)
                AND o.txid < pg_snapshot_xmax(p_window)
                AND (o.txid, o.id) IS DISTINCT FROM (p_after_txid, p_after_id)
                AND pg_visible_in_snapshot(o.txid, p_window)
              ORDER BY o.txid, o.id
              LIMIT p_limit)
           ) u
     ORDER BY u.txid, u.id
     LIMIT p_limit
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION fn_iu_route_worker_claim(text, pg_snapshot, pg_snapshot, xid8, uuid, integer) IS
    'Internal (route worker): the next page of a snapshot-difference window, two bounded index range scans on event_outbox (event_domain, txid, id).';

-- ---------------------------------------------------------------------------------------
-- Internal: what is still waiting for a worker (backlog) and how old the oldest of it is.
-- Rows not visible in done_snapshot, minus what the open window already consumed; only
-- committed rows count (the statement's snapshot).
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_pending(
    p_event_domain text,
    p_done         pg_snapshot,
    p_window       pg_snapshot,
    p_after_txid   xid8,
    p_after_id     uuid
)
RETURNS TABLE (pending bigint, oldest_created_at timestamptz)
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    WITH cand AS (
        SELECT o.id, o.txid, o.created_at
          FROM pg_snapshot_xip(coalesce(p_done, '1:1:'::pg_snapshot)) AS x(xip_txid)
          JOIN event_outbox o ON o.event_domain = p_event_domain AND o.txid = x.xip_txid
        UNION ALL
        SELECT o.id, o.txid, o.created_at
          FROM event_outbox o
         WHERE o.event_domain = p_event_domain
           AND o.txid >= pg_snapshot_xmax(coalesce(p_done, '1:1:'::pg_snapshot))
    )
    SELECT count(*), min(c.created_at)
      FROM cand c
     WHERE p_window IS NULL
        OR p_after_txid IS NULL
        OR NOT pg_visible_in_snapshot(c.txid, p_window)
        OR (c.txid, c.id) > (p_after_txid, p_after_id)
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- Internal: the transactions that hold a worker's windows open — in-progress xids of the
-- stored snapshots that are still running, with their backend (pid, age) when visible.
-- pid and backend_xid are visible to any role; xact_start, state and the age of another
-- role's session need the function owner (the migrating role) to be superuser or a member
-- of pg_read_all_stats, otherwise they are null (the txid and the count are always there).
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_holders(p_done pg_snapshot, p_window pg_snapshot)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_now_snap pg_snapshot := pg_current_snapshot();
    v_running  xid8[];
BEGIN
    SELECT array_agg(DISTINCT x.xip_txid)
      INTO v_running
      FROM (SELECT pg_snapshot_xip(p_done) AS xip_txid
            UNION ALL
            SELECT pg_snapshot_xip(p_window)) x
     WHERE x.xip_txid IS NOT NULL
       AND NOT pg_visible_in_snapshot(x.xip_txid, v_now_snap);
    IF v_running IS NULL THEN
        RETURN '[]'::jsonb;
    END IF;
    RETURN (
        SELECT coalesce(jsonb_agg(jsonb_build_object(
                    'txid', r.txid::text,
                    'pid', a.pid,
                    'usename', a.usename,
                    'application_name', a.application_name,
                    'state', a.state,
                    'xact_start', coalesce(a.xact_start, px.prepared),
                    'xact_age_seconds', round(extract(epoch FROM clock_timestamp() - coalesce(a.xact_start, px.prepared))::numeric, 3),
                    'prepared_gid', px.gid)
                ORDER BY coalesce(a.xact_start, px.prepared) NULLS LAST, r.txid), '[]'::jsonb)
          FROM unnest(v_running) AS r(txid)
          LEFT JOIN pg_stat_activity a ON a.backend_xid = r.txid::xid
          LEFT JOIN pg_prepared_xacts px ON px.transaction = r.txid::xid   -- a forgotten 2PC transaction
         -- Snapshots list the whole cluster's transactions; one in another database cannot
         -- write this event_outbox, so it holds nothing back here.
         WHERE (a.datname IS NULL OR a.datname = current_database())
           AND (px.database IS NULL OR px.database = current_database())
    );
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- Internal: tick the worker's queue_heartbeat row (re-registering it if someone removed it).
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_beat(p_worker_name text, p_event_domain text, p_payload jsonb)
RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
BEGIN
    UPDATE queue_heartbeat h
       SET last_beat_at      = now(),
           ticks_total       = h.ticks_total + 1,
           status            = 'ok',
           last_beat_payload = p_payload
     WHERE h.executor_id = p_worker_name;
    IF NOT FOUND THEN
        INSERT INTO queue_heartbeat (executor_id, executor_kind, domain_scope, status, last_beat_at,
                                     last_beat_payload, ticks_total, expected_cadence_seconds,
                                     stale_threshold_seconds)
        VALUES (p_worker_name, 'PG_worker', ARRAY[p_event_domain], 'ok', now(), p_payload, 1, 60, 300)
        ON CONFLICT (executor_id) DO NOTHING;
    END IF;
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- Internal: record one failure — a failed attempt and a dead letter with the whole event.
-- Returns 1 when the attempt was written + 2 when the dead letter was written (a re-scan
-- after a cursor reset writes neither: both are keyed by the idempotency key).
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_fail(
    p_worker_name     text,
    p_event_id        uuid,
    p_route_key       text,
    p_route_kind      text,
    p_idempotency_key text,
    p_error_code      text,
    p_error_message   text,
    p_stage           text
)
RETURNS integer
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_snap jsonb;
    v_att  integer;
    v_dl   integer;
BEGIN
    SELECT to_jsonb(e) INTO v_snap FROM event_outbox e WHERE e.id = p_event_id;

    INSERT INTO iu_route_attempt (event_ref, worker_name, route_key, route_kind, status, idempotency_key,
                                  detail, error_code, error_message)
    VALUES (p_event_id, p_worker_name, p_route_key, p_route_kind, 'failed', p_idempotency_key,
            jsonb_build_object('stage', p_stage), p_error_code, p_error_message)
    ON CONFLICT (idempotency_key, attempt_no) DO NOTHING;
    GET DIAGNOSTICS v_att = ROW_COUNT;

    INSERT INTO iu_route_dead_letter (worker_name, event_id, event_domain, event_type, event_stream, route_key,
                                      idempotency_key, event_snapshot, error_code, error_message)
    VALUES (p_worker_name, p_event_id, v_snap->>'event_domain', v_snap->>'event_type', v_snap->>'event_stream',
            p_route_key, p_idempotency_key, v_snap, p_error_code, p_error_message)
    ON CONFLICT (idempotency_key) DO NOTHING;
    GET DIAGNOSTICS v_dl = ROW_COUNT;

    RETURN v_att + 2 * v_dl;
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- The delivery seam. Unbuilt on purpose: nothing is delivered downstream by this package.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_deliver(
    p_event_snapshot  jsonb,
    p_route_key       text,
    p_route_kind      text,
    p_idempotency_key text
)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'fn_iu_route_deliver: delivery is not built: route % (dry_run = false) fails closed',
        coalesce(p_route_key, '(none)')
        USING ERRCODE = 'feature_not_supported',
              HINT = 'Keep the route dry_run (UPDATE iu_outbound_route SET dry_run = true ...) and replay the dead letter, or build the delivery seam.';
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_register
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_register(p_worker_name text, p_event_domain text DEFAULT 'iu')
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_sysid   bigint := (SELECT s.system_identifier FROM pg_control_system() s);
    v_actor   text   := coalesce(nullif(current_setting('app.actor', true), ''), session_user);
    v_created integer;
    v_hb      integer;
    c         iu_route_worker_cursor%ROWTYPE;
BEGIN
    IF coalesce(p_worker_name, '') = '' THEN
        RAISE EXCEPTION 'fn_iu_route_worker_register: p_worker_name required' USING ERRCODE = '22023';
    END IF;
    IF position(':' IN p_worker_name) > 0 THEN
        RAISE EXCEPTION 'fn_iu_route_worker_register: p_worker_name % may not contain '':''', quote_literal(p_worker_name)
            USING ERRCODE = '22023',
                  HINT = 'The worker name is part of idempotency keys (iu_wrk:{worker}:{route_key}:{event_id}).';
    END IF;
    IF coalesce(p_event_domain, '') = '' THEN
        RAISE EXCEPTION 'fn_iu_route_worker_register: p_event_domain required' USING ERRCODE = '22023';
    END IF;

    INSERT INTO iu_route_worker_cursor (worker_name, event_domain, system_identifier, registered_by)
    VALUES (p_worker_name, p_event_domain, v_sysid, v_actor)
    ON CONFLICT (worker_name) DO NOTHING;
    GET DIAGNOSTICS v_created = ROW_COUNT;

    SELECT * INTO c FROM iu_route_worker_cursor WHERE worker_name = p_worker_name;
    IF c.event_domain <> p_event_domain THEN
        RAISE EXCEPTION 'fn_iu_route_worker_register: worker % is already registered for domain %',
            quote_literal(p_worker_name), quote_literal(c.event_domain)
            USING ERRCODE = '22023',
                  HINT = 'A worker consumes one domain; register another worker name for another domain.';
    END IF;

    -- The PG_worker heartbeat: 60 s expected cadence, stale after 300 s. ON CONFLICT DO
    -- NOTHING so a re-register keeps the row's history (ticks, last beat, pause).
    INSERT INTO queue_heartbeat (executor_id, executor_kind, domain_scope, expected_cadence_seconds,
                                 stale_threshold_seconds, registered_by, last_beat_payload)
    VALUES (p_worker_name, 'PG_worker', ARRAY[p_event_domain], 60, 300, v_actor,
            jsonb_build_object('registered', true))
    ON CONFLICT (executor_id) DO NOTHING;
    GET DIAGNOSTICS v_hb = ROW_COUNT;

    RETURN jsonb_build_object(
        'worker', p_worker_name,
        'event_domain', c.event_domain,
        'registered', true,
        'created', v_created > 0,
        'cursor', CASE WHEN c.done_snapshot IS NULL AND c.window_snapshot IS NULL THEN 'start_of_stream' ELSE 'kept' END,
        'system_identifier', c.system_identifier::text,
        'heartbeat_created', v_hb > 0,
        'heartbeat', (SELECT jsonb_build_object('executor_id', h.executor_id, 'executor_kind', h.executor_kind,
                                                'expected_cadence_seconds', h.expected_cadence_seconds,
                                                'stale_threshold_seconds', h.stale_threshold_seconds)
                        FROM queue_heartbeat h WHERE h.executor_id = p_worker_name));
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- Internal: the snapshot a new window is taken with. pg_current_snapshot() leaves the
-- calling transaction's own xid out of its in-progress list, so when the caller inserted
-- events in the same transaction (or inserts more after the run, before it commits) and a
-- newer transaction has completed, its own xid would read as "visible" and its rows would
-- land behind done_snapshot, never to be claimed. Listing our own xid as in progress makes
-- branch (a) of the claim pick those rows up once the transaction commits.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_snapshot()
RETURNS pg_snapshot
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v_snap pg_snapshot := pg_current_snapshot();
    v_self xid8        := pg_current_xact_id_if_assigned();
BEGIN
    IF v_self IS NULL OR NOT pg_visible_in_snapshot(v_self, v_snap) THEN
        RETURN v_snap;
    END IF;
    RETURN (least(pg_snapshot_xmin(v_snap), v_self)::text || ':' || pg_snapshot_xmax(v_snap)::text || ':'
            || (SELECT string_agg(x.xip::text, ',' ORDER BY x.xip)
                  FROM (SELECT pg_snapshot_xip(v_snap) AS xip UNION SELECT v_self) x))::pg_snapshot;
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- Internal: does the domain hold committed rows whose txid lies at or beyond this cluster's
-- next transaction id? No transaction of this cluster can have written them (a visible row
-- committed before the statement's snapshot, so its txid is below xmax), so they were
-- restored from another cluster: left alone they would stay invisible to every window.
-- One probe at the top of the (event_domain, txid, id) index; normally it finds nothing.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_foreign_txids(p_event_domain text)
RETURNS boolean
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    SELECT EXISTS (SELECT 1 FROM event_outbox o
                    WHERE o.event_domain = p_event_domain
                      AND o.txid >= pg_snapshot_xmax(pg_current_snapshot())
                      AND o.txid IS DISTINCT FROM pg_current_xact_id_if_assigned())
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_event_outbox_rebase_foreign_txids: the documented fix for rows restored from
-- another cluster (IU002 "transaction ids from another cluster"). Re-stamps their txid with
-- this transaction's, so they become one new window for every worker once it commits; the
-- idempotency keys keep the ones already routed in the old cluster duplicate-free. Only the
-- txid bookkeeping column changes (the append-only trigger checks that).
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_event_outbox_rebase_foreign_txids()
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_me   xid8 := pg_current_xact_id();
    v_rows bigint;
    v_doms jsonb;
BEGIN
    PERFORM set_config('iu.rebase_txid', 'on', true);
    WITH moved AS (
        UPDATE event_outbox o
           SET txid = v_me
         WHERE o.txid >= pg_snapshot_xmax(pg_current_snapshot())
           AND o.txid <> v_me
        RETURNING o.event_domain
    )
    SELECT count(*), coalesce(jsonb_object_agg(m.event_domain, m.n), '{}'::jsonb)
      INTO v_rows, v_doms
      FROM (SELECT event_domain, count(*) AS n FROM moved GROUP BY event_domain) m;
    PERFORM set_config('iu.rebase_txid', 'off', true);
    RETURN jsonb_build_object('rebased', coalesce(v_rows, 0), 'by_domain', v_doms, 'txid', v_me::text,
                              'note', 'the rows are routed as one new window once this transaction commits');
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_run
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_run(p_worker_name text, p_batch_limit integer DEFAULT 100)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
-- The page statement's plan is the same for every call (two index range scans whose bounds
-- are parameters); re-planning it per call (the custom plans "auto" keeps choosing) costs
-- more than a batch of 100 takes to route.
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    c              iu_route_worker_cursor%ROWTYPE;
    v_routes_on    boolean;
    v_worker_on    boolean;
    v_reason       text;
    v_sysid        bigint;
    v_cur_xmax     xid8;
    v_done         pg_snapshot;
    v_done_moved   boolean := false;
    v_window       pg_snapshot;
    v_after_txid   xid8;
    v_after_id     uuid;
    v_opened_here  boolean := false;
    v_remaining    integer := p_batch_limit;
    v_page_limit   integer;
    v_page         integer;
    v_ok           boolean;
    v_fallback     boolean := false;
    v_fallback_err text;
    v_claimed      integer := 0;
    v_written      integer := 0;
    v_dead         integer := 0;
    v_dups         integer := 0;
    n_dry          integer := 0;
    n_disabled     integer := 0;
    n_skipped      integer := 0;
    n_failed       integer := 0;
    n_sent         integer := 0;
    v_opened       integer := 0;
    v_closed       integer := 0;
    k_dry          integer;
    k_disabled     integer;
    k_skipped      integer;
    l_txid         xid8;
    l_id           uuid;
    l_created      timestamptz;
    v_last_created timestamptz;
    v_last_id      uuid;
    d_ids          uuid[];
    d_keys         text[];
    d_kinds        text[];
    v_key          text;
    v_res          jsonb;
    v_n            integer;
    v_state        text;
    v_msg          text;
    v_holders      jsonb;
    v_summary      jsonb;
    r              record;
BEGIN
    IF coalesce(p_worker_name, '') = '' THEN
        RAISE EXCEPTION 'fn_iu_route_worker_run: p_worker_name required' USING ERRCODE = '22023';
    END IF;
    IF p_batch_limit IS NULL OR p_batch_limit < 1 OR p_batch_limit > 10000 THEN
        RAISE EXCEPTION 'fn_iu_route_worker_run: p_batch_limit must be between 1 and 10000, got %',
            coalesce(p_batch_limit::text, 'NULL') USING ERRCODE = '22023';
    END IF;

    -- One run per worker at a time: a second run never waits, it reports busy.
    SELECT * INTO c FROM iu_route_worker_cursor cur
     WHERE cur.worker_name = p_worker_name
       FOR NO KEY UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        IF EXISTS (SELECT 1 FROM iu_route_worker_cursor cur WHERE cur.worker_name = p_worker_name) THEN
            RETURN jsonb_build_object('worker', p_worker_name, 'gated', false, 'busy', true,
                                      'reason', 'another run of this worker is in progress',
                                      'claimed', 0, 'attempts_written', 0, 'dead_lettered', 0,
                                      'dry_run', 0, 'disabled', 0, 'skipped', 0, 'failed', 0, 'sent', 0);
        END IF;
        RAISE EXCEPTION 'fn_iu_route_worker_run: worker % is not registered', quote_literal(p_worker_name)
            USING ERRCODE = 'P0002',
                  HINT = format('Register it first: SELECT fn_iu_route_worker_register(%L);', p_worker_name);
    END IF;

    -- Dual fail-closed gate. A gated run is a clean no-op that still ticks the heartbeat.
    v_routes_on := fn_iu_core_routes_enabled() IS TRUE;
    v_worker_on := fn_iu_route_worker_enabled() IS TRUE;
    IF NOT (v_routes_on AND v_worker_on) THEN
        v_reason := CASE WHEN NOT v_routes_on AND NOT v_worker_on THEN 'master_and_worker_gates_closed'
                         WHEN NOT v_routes_on THEN 'master_gate_closed'
                         ELSE 'worker_gate_closed' END;
        PERFORM fn_iu_route_worker_beat(p_worker_name, c.event_domain,
                                        jsonb_build_object('gated', true, 'reason', v_reason));
        RETURN jsonb_build_object('worker', p_worker_name, 'event_domain', c.event_domain,
                                  'gated', true, 'busy', false, 'reason', v_reason,
                                  'gates', jsonb_build_object('iu_core.routes_enabled', v_routes_on,
                                                              'iu_core.route_worker_enabled', v_worker_on),
                                  'claimed', 0, 'attempts_written', 0, 'dead_lettered', 0,
                                  'dry_run', 0, 'disabled', 0, 'skipped', 0, 'failed', 0, 'sent', 0);
    END IF;

    -- Cursor sanity: the stored snapshots must belong to this cluster and not lie ahead.
    v_sysid := (SELECT s.system_identifier FROM pg_control_system() s);
    IF c.system_identifier IS DISTINCT FROM v_sysid AND c.system_identifier IS NOT NULL THEN
        RAISE EXCEPTION 'fn_iu_route_worker_run: cursor of worker % was recorded in another cluster (system_identifier %, this cluster %)',
            quote_literal(p_worker_name), c.system_identifier, v_sysid
            USING ERRCODE = 'IU002',
                  HINT = format('Re-anchor it: SELECT fn_iu_route_worker_reset_cursor(%L); the re-scan writes no duplicate attempts (idempotency keys).', p_worker_name);
    END IF;
    v_cur_xmax := pg_snapshot_xmax(pg_current_snapshot());
    IF pg_snapshot_xmax(c.done_snapshot) > v_cur_xmax
       OR pg_snapshot_xmax(c.window_snapshot) > v_cur_xmax
       OR c.window_txid >= v_cur_xmax THEN
        RAISE EXCEPTION 'fn_iu_route_worker_run: cursor of worker % holds transaction ids ahead of this cluster (stored xmax %, current %)',
            quote_literal(p_worker_name), pg_snapshot_xmax(c.done_snapshot), v_cur_xmax
            USING ERRCODE = 'IU002',
                  HINT = format('The cursor comes from another cluster (dump/restore?). Re-anchor it: SELECT fn_iu_route_worker_reset_cursor(%L); the re-scan writes no duplicate attempts (idempotency keys).', p_worker_name);
    END IF;

    -- Rows restored from another cluster would stay invisible to every window: refuse and say so.
    IF fn_iu_route_worker_foreign_txids(c.event_domain) THEN
        RAISE EXCEPTION 'fn_iu_route_worker_run: event_outbox holds % rows whose transaction ids come from another cluster (dump/restore?)',
            quote_literal(c.event_domain)
            USING ERRCODE = 'IU002',
                  HINT = 'Re-stamp them: SELECT fn_iu_event_outbox_rebase_foreign_txids(); they are routed as one new window (duplicate-free: idempotency keys). If the cursor is foreign too, also SELECT fn_iu_route_worker_reset_cursor(...).';
    END IF;

    v_done       := coalesce(c.done_snapshot, '1:1:'::pg_snapshot);
    v_window     := c.window_snapshot;
    v_after_txid := c.window_txid;
    v_after_id   := c.window_event_id;

    LOOP
        IF v_window IS NULL THEN
            -- A fresh window: everything committed as of this statement.
            v_window      := fn_iu_route_worker_snapshot();
            v_opened_here := true;
            v_opened      := v_opened + 1;
            v_after_txid  := NULL;
            v_after_id    := NULL;
        END IF;
        v_page_limit := v_remaining;
        v_page := 0;
        d_ids := NULL; d_keys := NULL; d_kinds := NULL;
        l_txid := NULL; l_id := NULL; l_created := NULL;

        -- The common path: the whole page decided and audited in one statement.
        v_ok := true;
        BEGIN
            WITH page AS MATERIALIZED (
                SELECT p.id, p.txid, p.event_type, p.event_stream, p.created_at
                  FROM fn_iu_route_worker_claim(c.event_domain, v_done, v_window, v_after_txid, v_after_id, v_page_limit) p
            ), decided AS MATERIALIZED (
                SELECT p.id, p.txid, rt.route_key, rt.route_kind,
                       CASE WHEN rt.id IS NULL THEN 'skipped'
                            WHEN NOT rt.enabled THEN 'disabled'
                            WHEN rt.dry_run THEN 'dry_run'
                            ELSE 'deliver' END AS decision
                  FROM page p
                  LEFT JOIN iu_outbound_route rt
                         ON rt.event_domain = c.event_domain
                        AND rt.event_type = p.event_type
                        AND rt.event_stream = p.event_stream
            ), ins AS (
                INSERT INTO iu_route_attempt (event_ref, worker_name, route_key, route_kind, status, idempotency_key)
                SELECT d.id, p_worker_name, d.route_key, d.route_kind, d.decision,
                       'iu_wrk:' || p_worker_name || ':' || coalesce(d.route_key, 'none') || ':' || d.id::text
                  FROM decided d
                 WHERE d.decision <> 'deliver'
                ON CONFLICT (idempotency_key, attempt_no) DO NOTHING
                RETURNING status
            )
            SELECT (SELECT count(*) FROM page),
                   i.n_dry, i.n_disabled, i.n_skipped,
                   l.txid, l.id, l.created_at,
                   dv.ids, dv.keys, dv.kinds
              INTO v_page, k_dry, k_disabled, k_skipped,
                   l_txid, l_id, l_created,
                   d_ids, d_keys, d_kinds
              FROM (SELECT count(*) FILTER (WHERE ins.status = 'dry_run')  AS n_dry,
                           count(*) FILTER (WHERE ins.status = 'disabled') AS n_disabled,
                           count(*) FILTER (WHERE ins.status = 'skipped')  AS n_skipped
                      FROM ins) i
              CROSS JOIN (SELECT array_agg(d.id ORDER BY d.txid, d.id)         AS ids,
                                 array_agg(d.route_key ORDER BY d.txid, d.id)  AS keys,
                                 array_agg(d.route_kind ORDER BY d.txid, d.id) AS kinds
                            FROM decided d WHERE d.decision = 'deliver') dv
              LEFT JOIN LATERAL (SELECT p.txid, p.id, p.created_at FROM page p
                                  ORDER BY p.txid DESC, p.id DESC LIMIT 1) l ON true;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
            v_ok := false;
            v_fallback := true;
            v_fallback_err := v_state || ': ' || v_msg;
        END;

        IF v_ok THEN
            n_dry      := n_dry + k_dry;
            n_disabled := n_disabled + k_disabled;
            n_skipped  := n_skipped + k_skipped;
            v_written  := v_written + k_dry + k_disabled + k_skipped;
            v_dups     := v_dups + v_page - coalesce(array_length(d_ids, 1), 0) - (k_dry + k_disabled + k_skipped);
        ELSE
            -- The page statement failed: redo the page event by event, each isolated.
            v_page := 0;
            d_ids := '{}'; d_keys := '{}'; d_kinds := '{}';
            FOR r IN
                SELECT p.id, p.txid, p.created_at, rt.route_key, rt.route_kind,
                       CASE WHEN rt.id IS NULL THEN 'skipped'
                            WHEN NOT rt.enabled THEN 'disabled'
                            WHEN rt.dry_run THEN 'dry_run'
                            ELSE 'deliver' END AS decision
                  FROM fn_iu_route_worker_claim(c.event_domain, v_done, v_window, v_after_txid, v_after_id, v_page_limit) p
                  LEFT JOIN iu_outbound_route rt
                         ON rt.event_domain = c.event_domain
                        AND rt.event_type = p.event_type
                        AND rt.event_stream = p.event_stream
                 ORDER BY p.txid, p.id
            LOOP
                v_page := v_page + 1;
                l_txid := r.txid; l_id := r.id; l_created := r.created_at;
                v_key := 'iu_wrk:' || p_worker_name || ':' || coalesce(r.route_key, 'none') || ':' || r.id::text;
                IF r.decision = 'deliver' THEN
                    d_ids := d_ids || r.id; d_keys := d_keys || r.route_key; d_kinds := d_kinds || r.route_kind;
                    CONTINUE;
                END IF;
                BEGIN
                    INSERT INTO iu_route_attempt (event_ref, worker_name, route_key, route_kind, status, idempotency_key)
                    VALUES (r.id, p_worker_name, r.route_key, r.route_kind, r.decision, v_key)
                    ON CONFLICT (idempotency_key, attempt_no) DO NOTHING;
                    GET DIAGNOSTICS v_n = ROW_COUNT;
                    IF v_n = 0 THEN
                        v_dups := v_dups + 1;
                    ELSE
                        v_written := v_written + 1;
                        CASE r.decision
                            WHEN 'dry_run'  THEN n_dry := n_dry + 1;
                            WHEN 'disabled' THEN n_disabled := n_disabled + 1;
                            ELSE n_skipped := n_skipped + 1;
                        END CASE;
                    END IF;
                EXCEPTION WHEN OTHERS THEN
                    GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
                    v_n := fn_iu_route_worker_fail(p_worker_name, r.id, r.route_key, r.route_kind, v_key,
                                                   v_state, v_msg, 'decide');
                    IF (v_n & 1) = 1 THEN v_written := v_written + 1; n_failed := n_failed + 1; ELSE v_dups := v_dups + 1; END IF;
                    IF (v_n & 2) = 2 THEN v_dead := v_dead + 1; END IF;
                END;
            END LOOP;
        END IF;

        -- The delivery seam: only enabled, dry_run = false routes get here, one isolated
        -- block each. An event already attempted (a re-scan) is never handed over twice.
        FOR i IN 1 .. coalesce(array_length(d_ids, 1), 0) LOOP
            v_key := 'iu_wrk:' || p_worker_name || ':' || coalesce(d_keys[i], 'none') || ':' || d_ids[i]::text;
            IF EXISTS (SELECT 1 FROM iu_route_attempt a WHERE a.idempotency_key = v_key) THEN
                v_dups := v_dups + 1;
                CONTINUE;
            END IF;
            BEGIN
                v_res := fn_iu_route_deliver((SELECT to_jsonb(e) FROM event_outbox e WHERE e.id = d_ids[i]),
                                             d_keys[i], d_kinds[i], v_key);
                INSERT INTO iu_route_attempt (event_ref, worker_name, route_key, route_kind, status, idempotency_key, detail)
                VALUES (d_ids[i], p_worker_name, d_keys[i], d_kinds[i], 'sent', v_key, coalesce(v_res, '{}'::jsonb))
                ON CONFLICT (idempotency_key, attempt_no) DO NOTHING;
                v_written := v_written + 1;
                n_sent := n_sent + 1;
            EXCEPTION WHEN OTHERS THEN
                GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
                v_n := fn_iu_route_worker_fail(p_worker_name, d_ids[i], d_keys[i], d_kinds[i], v_key,
                                               v_state, v_msg, 'deliver');
                IF (v_n & 1) = 1 THEN v_written := v_written + 1; n_failed := n_failed + 1; ELSE v_dups := v_dups + 1; END IF;
                IF (v_n & 2) = 2 THEN v_dead := v_dead + 1; END IF;
            END;
        END LOOP;

        v_claimed   := v_claimed + v_page;
        v_remaining := v_remaining - v_page;
        IF v_page > 0 THEN
            v_after_txid   := l_txid;
            v_after_id     := l_id;
            v_last_created := l_created;
            v_last_id      := l_id;
        END IF;

        IF v_page < v_page_limit THEN
            -- A short page: the window is exhausted and becomes the done snapshot.
            v_done       := v_window;
            v_done_moved := true;
            v_window     := NULL;
            v_after_txid := NULL;
            v_after_id   := NULL;
            v_closed     := v_closed + 1;
            -- Open one more window only if this run did not open the one just closed.
            EXIT WHEN v_opened_here OR v_remaining <= 0;
        ELSE
            EXIT; -- the batch is full; the window stays open at (v_after_txid, v_after_id)
        END IF;
    END LOOP;

    v_holders := fn_iu_route_worker_holders(v_done, v_window);

    v_summary := jsonb_build_object(
        'worker', p_worker_name,
        'event_domain', c.event_domain,
        'gated', false,
        'busy', false,
        'batch_limit', p_batch_limit,
        'claimed', v_claimed,
        'attempts_written', v_written,
        'dead_lettered', v_dead,
        'dry_run', n_dry,
        'disabled', n_disabled,
        'skipped', n_skipped,
        'failed', n_failed,
        'sent', n_sent,
        'already_attempted', v_dups,
        'caught_up', v_window IS NULL,
        'window_open', v_window IS NOT NULL,
        'windows_opened', v_opened,
        'windows_closed', v_closed,
        'fallback', v_fallback,
        'held_open_count', jsonb_array_length(v_holders),
        'held_open_by', v_holders,
        'run_at', now());
    IF v_fallback THEN
        v_summary := v_summary || jsonb_build_object('fallback_error', left(v_fallback_err, 500));
    END IF;

    UPDATE iu_route_worker_cursor cur
       SET done_snapshot     = CASE WHEN v_done_moved THEN v_done ELSE cur.done_snapshot END,
           window_snapshot   = v_window,
           window_txid       = v_after_txid,
           window_event_id   = v_after_id,
           system_identifier = coalesce(cur.system_identifier, v_sysid),
           last_created_at   = coalesce(v_last_created, cur.last_created_at),
           last_event_id     = coalesce(v_last_id, cur.last_event_id),
           events_seen       = cur.events_seen + v_claimed,
           attempts_written  = cur.attempts_written + v_written,
           dead_lettered     = cur.dead_lettered + v_dead,
           runs_total        = cur.runs_total + 1,
           last_run_at       = now(),
           last_run_summary  = v_summary
     WHERE cur.worker_name = p_worker_name;

    PERFORM fn_iu_route_worker_beat(p_worker_name, c.event_domain,
        jsonb_build_object('claimed', v_claimed, 'attempts_written', v_written,
                           'dead_lettered', v_dead, 'caught_up', v_window IS NULL,
                           'held_open_count', jsonb_array_length(v_holders)));
    RETURN v_summary;
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_dead_letter_replay
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_dead_letter_replay(p_dead_letter_id uuid)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    dl         iu_route_dead_letter%ROWTYPE;
    rt         iu_outbound_route%ROWTYPE;
    v_found    boolean;
    v_status   text;
    v_attempt  integer;
    v_res      jsonb;
    v_state    text;
    v_msg      text;
    v_actor    text := coalesce(nullif(current_setting('app.actor', true), ''), session_user);
BEGIN
    IF p_dead_letter_id IS NULL THEN
        RAISE EXCEPTION 'fn_iu_route_dead_letter_replay: p_dead_letter_id required' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO dl FROM iu_route_dead_letter d WHERE d.id = p_dead_letter_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fn_iu_route_dead_letter_replay: dead letter % not found', p_dead_letter_id
            USING ERRCODE = 'P0002',
                  HINT = 'List the open ones: SELECT id, worker_name, idempotency_key, error_code FROM v_iu_route_dead_letter_open;';
    END IF;
    IF dl.resolved_at IS NOT NULL THEN
        RETURN jsonb_build_object('replayed', false, 'reason', 'already_resolved',
                                  'dead_letter_id', dl.id, 'resolved_at', dl.resolved_at,
                                  'resolution', dl.resolution, 'resolved_by', dl.resolved_by);
    END IF;

    -- The route as it is now, for the event as it was (the snapshot).
    SELECT * INTO rt FROM iu_outbound_route r
     WHERE r.event_domain = dl.event_snapshot->>'event_domain'
       AND r.event_type   = dl.event_snapshot->>'event_type'
       AND r.event_stream = dl.event_snapshot->>'event_stream';
    v_found := FOUND;

    SELECT coalesce(max(a.attempt_no), 0) + 1 INTO v_attempt
      FROM iu_route_attempt a WHERE a.idempotency_key = dl.idempotency_key;

    IF NOT v_found THEN
        v_status := 'skipped';
    ELSIF NOT rt.enabled THEN
        v_status := 'disabled';
    ELSIF rt.dry_run THEN
        v_status := 'dry_run';
    ELSE
        BEGIN
            v_res := fn_iu_route_deliver(dl.event_snapshot, rt.route_key, rt.route_kind, dl.idempotency_key);
            v_status := 'sent';
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
            v_status := 'failed';
        END;
    END IF;

    INSERT INTO iu_route_attempt (event_ref, worker_name, route_key, route_kind, status, idempotency_key,
                                  attempt_no, detail, error_code, error_message)
    VALUES (dl.event_id, dl.worker_name, rt.route_key, rt.route_kind, v_status, dl.idempotency_key, v_attempt,
            jsonb_build_object('replay_of', dl.id) || coalesce(v_res, '{}'::jsonb), v_state, v_msg);

    IF v_status IN ('dry_run', 'sent') THEN
        UPDATE iu_route_dead_letter d
           SET resolved_at = now(), resolution = 'replayed_' || v_status, resolved_by = v_actor
         WHERE d.id = dl.id
        RETURNING * INTO dl;
    ELSIF v_status = 'failed' THEN
        UPDATE iu_route_dead_letter d
           SET failed_attempts = d.failed_attempts + 1, last_failed_at = now(),
               error_code = v_state, error_message = v_msg
         WHERE d.id = dl.id
        RETURNING * INTO dl;
    END IF;

    RETURN jsonb_build_object(
        'replayed', true,
        'dead_letter_id', dl.id,
        'idempotency_key', dl.idempotency_key,
        'attempt_no', v_attempt,
        'status', v_status,
        'route_key', rt.route_key,
        'resolved', dl.resolved_at IS NOT NULL,
        'resolution', dl.resolution,
        'resolved_by', dl.resolved_by,
        'failed_attempts', dl.failed_attempts,
        'error_code', v_state,
        'error_message', v_msg);
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_reset_cursor
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_reset_cursor(p_worker_name text)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    c       iu_route_worker_cursor%ROWTYPE;
    v_sysid bigint := (SELECT s.system_identifier FROM pg_control_system() s);
    v_actor text   := coalesce(nullif(current_setting('app.actor', true), ''), session_user);
BEGIN
    IF coalesce(p_worker_name, '') = '' THEN
        RAISE EXCEPTION 'fn_iu_route_worker_reset_cursor: p_worker_name required' USING ERRCODE = '22023';
    END IF;
    -- Waits for a run in progress (runs are short), so a reset never interleaves with one.
    SELECT * INTO c FROM iu_route_worker_cursor cur WHERE cur.worker_name = p_worker_name FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fn_iu_route_worker_reset_cursor: worker % is not registered', quote_literal(p_worker_name)
            USING ERRCODE = 'P0002',
                  HINT = format('Register it first: SELECT fn_iu_route_worker_register(%L);', p_worker_name);
    END IF;

    UPDATE iu_route_worker_cursor cur
       SET done_snapshot = NULL, window_snapshot = NULL, window_txid = NULL, window_event_id = NULL,
           last_created_at = NULL, last_event_id = NULL,
           system_identifier = v_sysid, reset_at = now(), reset_by = v_actor
     WHERE cur.worker_name = p_worker_name;

    RETURN jsonb_build_object(
        'worker', p_worker_name,
        'reset', true,
        'cursor', 'start_of_stream',
        'system_identifier', v_sysid::text,
        'previous', jsonb_build_object('done_snapshot', c.done_snapshot::text,
                                       'window_snapshot', c.window_snapshot::text,
                                       'last_created_at', c.last_created_at,
                                       'last_event_id', c.last_event_id,
                                       'system_identifier', c.system_identifier::text),
        'reset_by', v_actor,
        'note', 'the next runs re-scan the domain; idempotency keys keep them duplicate-free');
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_health
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_health(p_worker_name text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_routes_on boolean := fn_iu_core_routes_enabled() IS TRUE;
    v_worker_on boolean := fn_iu_route_worker_enabled() IS TRUE;
    v_sysid     bigint  := (SELECT s.system_identifier FROM pg_control_system() s);
    v_xmax      xid8    := pg_snapshot_xmax(pg_current_snapshot());
    v_gates     jsonb;
    v_workers   jsonb;
BEGIN
    IF p_worker_name = '' THEN
        RAISE EXCEPTION 'fn_iu_route_worker_health: p_worker_name must be NULL (all workers) or a worker name'
            USING ERRCODE = '22023';
    END IF;
    IF p_worker_name IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM iu_route_worker_cursor cur WHERE cur.worker_name = p_worker_name) THEN
        RAISE EXCEPTION 'fn_iu_route_worker_health: worker % is not registered', quote_literal(p_worker_name)
            USING ERRCODE = 'P0002',
                  HINT = format('Register it first: SELECT fn_iu_route_worker_register(%L);', p_worker_name);
    END IF;

    v_gates := jsonb_build_object('iu_core.routes_enabled', v_routes_on,
                                  'iu_core.route_worker_enabled', v_worker_on,
                                  'open', v_routes_on AND v_worker_on);

    SELECT coalesce(jsonb_agg(w.doc ORDER BY w.worker_name), '[]'::jsonb)
      INTO v_workers
      FROM (
        SELECT cur.worker_name,
               jsonb_build_object(
                   'worker', cur.worker_name,
                   'event_domain', cur.event_domain,
                   'gates', v_gates,
                   'runs_total', cur.runs_total,
                   'last_run_at', cur.last_run_at,
                   'last_run_age_seconds', round(extract(epoch FROM now() - cur.last_run_at)::numeric, 3),
                   'events_seen', cur.events_seen,
                   'attempts_written', cur.attempts_written,
                   'dead_lettered', cur.dead_lettered,
                   'backlog', pend.pending,
                   'oldest_pending_created_at', pend.oldest_created_at,
                   'oldest_pending_age_seconds', round(extract(epoch FROM now() - pend.oldest_created_at)::numeric, 3),
                   'open_dead_letters', dl.open_count,
                   'oldest_open_dead_letter_at', dl.oldest,
                   'window_open', cur.window_snapshot IS NOT NULL,
                   'held_open_count', jsonb_array_length(hold.holders),
                   'held_open_by', hold.holders,
                   'cursor_ok', k.ok AND NOT k.foreign_rows,
                   'foreign_txid_rows', k.foreign_rows,
                   'cursor_hint', CASE WHEN NOT k.ok THEN
                       format('cursor recorded in another cluster (IU002): SELECT fn_iu_route_worker_reset_cursor(%L);', cur.worker_name)
                                       WHEN k.foreign_rows THEN
                       'event_outbox holds rows with transaction ids from another cluster (IU002): SELECT fn_iu_event_outbox_rebase_foreign_txids();' END,
                   'heartbeat', (SELECT jsonb_build_object('last_beat_at', h.last_beat_at,
                                                           'age_seconds', round(extract(epoch FROM now() - h.last_beat_at)::numeric, 3),
                                                           'ticks_total', h.ticks_total,
                                                           'status', h.status,
                                                           'stale_threshold_seconds', h.stale_threshold_seconds,
                                                           'last_beat_payload', h.last_beat_payload)
                                   FROM queue_heartbeat h WHERE h.executor_id = cur.worker_name),
                   'last_run_summary', cur.last_run_summary) AS doc
          FROM iu_route_worker_cursor cur
          -- the same sanity rule as fn_iu_route_worker_run (IU002)
          CROSS JOIN LATERAL (
                SELECT (cur.system_identifier IS NULL OR cur.system_identifier = v_sysid)
                       AND coalesce(pg_snapshot_xmax(cur.done_snapshot) <= v_xmax, true)
                       AND coalesce(pg_snapshot_xmax(cur.window_snapshot) <= v_xmax, true) AS ok,
                       fn_iu_route_worker_foreign_txids(cur.event_domain) AS foreign_rows) k
          LEFT JOIN LATERAL (
                -- a cursor from another cluster has no meaningful backlog: NULL, cursor_ok false
                SELECT pp.pending, pp.oldest_created_at
                  FROM fn_iu_route_worker_pending(cur.event_domain, cur.done_snapshot, cur.window_snapshot,
                                                  cur.window_txid, cur.window_event_id) pp
                 WHERE k.ok) pend ON true
          CROSS JOIN LATERAL (
                SELECT count(*) AS open_count, min(d.last_failed_at) AS oldest
                  FROM iu_route_dead_letter d
                 WHERE d.worker_name = cur.worker_name AND d.resolved_at IS NULL) dl
          CROSS JOIN LATERAL (
                SELECT CASE WHEN k.ok
                            THEN fn_iu_route_worker_holders(cur.done_snapshot, cur.window_snapshot)
                            ELSE '[]'::jsonb END AS holders) hold
         WHERE p_worker_name IS NULL OR cur.worker_name = p_worker_name
      ) w;

    IF p_worker_name IS NOT NULL THEN
        -- One worker: its document at the top level (and in "workers" for uniform readers).
        RETURN (v_workers->0) || jsonb_build_object('checked_at', now(), 'workers', v_workers);
    END IF;
    RETURN jsonb_build_object('checked_at', now(), 'gates', v_gates,
                              'worker_count', jsonb_array_length(v_workers), 'workers', v_workers);
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- Views (read by operators: SELECT to workflow_admin)
-- ---------------------------------------------------------------------------------------
CREATE VIEW v_iu_route_worker_status AS
SELECT cur.worker_name,
       cur.event_domain,
       fn_iu_core_routes_enabled()  AS routes_enabled,
       fn_iu_route_worker_enabled() AS worker_enabled,
       fn_iu_core_routes_enabled() AND fn_iu_route_worker_enabled() AS gates_open,
       cur.last_run_at,
       round(extract(epoch FROM now() - cur.last_run_at)::numeric, 3) AS last_run_age_seconds,
       cur.runs_total,
       cur.events_seen,
       cur.attempts_written,
       cur.dead_lettered,
       pend.pending AS backlog,
       pend.oldest_created_at AS oldest_pending_created_at,
       round(extract(epoch FROM now() - pend.oldest_created_at)::numeric, 3) AS oldest_pending_age_seconds,
       (SELECT count(*) FROM iu_route_dead_letter d
         WHERE d.worker_name = cur.worker_name AND d.resolved_at IS NULL) AS open_dead_letters,
       cur.window_snapshot IS NOT NULL AS window_open,
       cur.last_created_at,
       cur.last_event_id,
       cur.done_snapshot,
       cur.window_snapshot,
       cur.window_txid,
       cur.window_event_id,
       cur.system_identifier,
       cur.last_run_summary
  FROM iu_route_worker_cursor cur
  LEFT JOIN LATERAL fn_iu_route_worker_pending(cur.event_domain, cur.done_snapshot, cur.window_snapshot,
                                               cur.window_txid, cur.window_event_id) pend ON true;

COMMENT ON VIEW v_iu_route_worker_status IS
    'Route workers: cursor, gates, counters, backlog (committed events not yet routed) and the age of the oldest.';

CREATE VIEW v_iu_route_dead_letter_open AS
SELECT d.id,
       d.worker_name,
       d.event_id,
       d.event_domain,
       d.event_type,
       d.event_stream,
       d.route_key,
       d.idempotency_key,
       d.error_code,
       d.error_message,
       d.failed_attempts,
       d.first_failed_at,
       d.last_failed_at,
       round(extract(epoch FROM now() - d.first_failed_at)::numeric, 3) AS age_seconds,
       format('SELECT fn_iu_route_dead_letter_replay(%L);', d.id) AS replay_sql
  FROM iu_route_dead_letter d
 WHERE d.resolved_at IS NULL;

COMMENT ON VIEW v_iu_route_dead_letter_open IS
    'Open (unresolved) route worker dead letters, with the replay call for each.';

CREATE VIEW v_iu_route_attempt_summary AS
SELECT a.worker_name,
       a.status,
       count(*)                   AS attempts,
       count(DISTINCT a.event_ref) AS events,
       count(*) FILTER (WHERE a.attempt_no > 1) AS replays,
       min(a.created_at)          AS first_at,
       max(a.created_at)          AS last_at
  FROM iu_route_attempt a
 GROUP BY a.worker_name, a.status;

COMMENT ON VIEW v_iu_route_attempt_summary IS
    'Route worker audit rows by worker and status (attempts, distinct events, replays, first/last).';

-- ---------------------------------------------------------------------------------------
-- Privileges (spec 9): PUBLIC executes nothing; executors run the worker, operators the rest.
-- ---------------------------------------------------------------------------------------
REVOKE ALL ON FUNCTION fn_iu_route_worker_claim(text, pg_snapshot, pg_snapshot, xid8, uuid, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_snapshot() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_foreign_txids(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_event_outbox_rebase_foreign_txids() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_pending(text, pg_snapshot, pg_snapshot, xid8, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_holders(pg_snapshot, pg_snapshot) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_beat(text, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_fail(text, uuid, text, text, text, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_deliver(jsonb, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_register(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_run(text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_dead_letter_replay(uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_reset_cursor(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_health(text) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION fn_iu_route_worker_run(text, integer) TO dot_executor, workflow_admin;
GRANT EXECUTE ON FUNCTION fn_iu_route_worker_register(text, text) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_iu_route_worker_reset_cursor(text) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_iu_event_outbox_rebase_foreign_txids() TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_iu_route_dead_letter_replay(uuid) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_iu_route_worker_health(text) TO workflow_admin;
-- The status view calls the backlog helper, and view users need EXECUTE on what a view calls.
GRANT EXECUTE ON FUNCTION fn_iu_route_worker_pending(text, pg_snapshot, pg_snapshot, xid8, uuid) TO workflow_admin;

GRANT SELECT ON v_iu_route_worker_status, v_iu_route_dead_letter_open, v_iu_route_attempt_summary TO workflow_admin;

-- +goose Down
REVOKE SELECT ON v_iu_route_worker_status, v_iu_route_dead_letter_open, v_iu_route_attempt_summary FROM workflow_admin;
DROP VIEW v_iu_route_attempt_summary;
DROP VIEW v_iu_route_dead_letter_open;
DROP VIEW v_iu_route_worker_status;
DROP FUNCTION fn_iu_route_worker_health(text);
DROP FUNCTION fn_iu_route_worker_reset_cursor(text);
DROP FUNCTION fn_iu_route_dead_letter_replay(uuid);
DROP FUNCTION fn_iu_route_worker_run(text, integer);
DROP FUNCTION fn_iu_event_outbox_rebase_foreign_txids();
DROP FUNCTION fn_iu_route_worker_foreign_txids(text);
DROP FUNCTION fn_iu_route_worker_snapshot();
DROP FUNCTION fn_iu_route_worker_register(text, text);
DROP FUNCTION fn_iu_route_deliver(jsonb, text, text, text);
DROP FUNCTION fn_iu_route_worker_fail(text, uuid, text, text, text, text, text, text);
DROP FUNCTION fn_iu_route_worker_beat(text, text, jsonb);
DROP FUNCTION fn_iu_route_worker_holders(pg_snapshot, pg_snapshot);
DROP FUNCTION fn_iu_route_worker_pending(text, pg_snapshot, pg_snapshot, xid8, uuid);
DROP FUNCTION fn_iu_route_worker_claim(text, pg_snapshot, pg_snapshot, xid8, uuid, integer);
