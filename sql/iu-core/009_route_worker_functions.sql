-- 009_route_worker_functions.sql
--
-- Adds the route worker: the functions that consume one domain of event_outbox into
-- iu_route_attempt (exactly one audit row per event and route decision) and
-- iu_route_dead_letter (the replayable retry queue), plus the operator surface and views.
--
-- Public API (who may call it):
--   fn_iu_route_worker_register(p_worker_name, p_event_domain)  workflow_admin: cursor + PG_worker heartbeat
--   fn_iu_route_worker_run(p_worker_name, p_batch_limit)         dot_executor, workflow_admin: one pass
--   fn_iu_route_dead_letter_replay(p_dead_letter_id)             workflow_admin: re-attempt one dead letter
--   fn_iu_route_worker_reset_cursor(p_worker_name)               workflow_admin: back to the start
--   fn_iu_event_outbox_rebase_foreign_txids()                    workflow_admin: fix for restored rows (IU002)
--   fn_iu_route_worker_health(p_worker_name)                     workflow_admin: gates, lag, backlog, holders
--   v_iu_route_worker_status, v_iu_route_dead_letter_open, v_iu_route_attempt_summary  (SELECT: workflow_admin)
--
-- The rules, each written once (a newcomer looking for "the decision" finds one function):
--   fn_iu_route_decide             route found / enabled / dry_run -> skipped | disabled | dry_run | deliver
--   fn_iu_route_idempotency_key    iu_wrk:{worker}:{route_key or none}:{event_id}
--   fn_iu_route_worker_cursor_check    is a stored position from this cluster? (IU002)
--   v_iu_route_worker_status       the one worker-health computation (backlog, dead letters,
--                                  cursor sanity); the health function and v_queue_health read it
-- A run, as the small functions it calls, in order:
--   lock the cursor (SKIP LOCKED: busy, never wait) -> gates -> cursor sanity
--   -> per page: fn_iu_route_worker_page (the next rows of the window, fn_iu_route_worker_claim,
--                   each with its route and decision)
--                fn_iu_route_worker_decide_page (decide + audit the page in one statement;
--                   should it fail, fn_iu_route_worker_decide_each redoes it event by event)
--                fn_iu_route_worker_deliver_page (the delivery seam, one isolated block per event)
--                fn_iu_route_worker_fail (records a failure: failed attempt + dead letter)
--   -> fn_iu_route_worker_advance (move the cursor, count, beat the heartbeat)
--
-- Why the position is a pair of snapshots and not a (created_at, id) keyset
-- -------------------------------------------------------------------------
-- created_at is the inserting transaction's start time, so a transaction that commits late
-- lands behind a keyset that already moved on, and its rows are skipped. Reading only
-- txids below the cluster's xmin (watermill-sql's fix) lets any long transaction anywhere
-- stall every consumer. This worker batches like PgQ: the cursor stores
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
-- Per-event isolation without a subtransaction per event: a PL/pgSQL exception block is a
-- subtransaction, and more than 64 of them in one transaction overflow the per-backend
-- subxid cache and slow every other session. So the dry_run / disabled / skipped decisions
-- of a whole page are one INSERT ... SELECT ... ON CONFLICT DO NOTHING inside a single
-- exception block (one subtransaction per page). Only events that reach the delivery seam
-- (route enabled, dry_run = false) get their own block. Should the page statement fail, the
-- page is redone event by event, each in its own block, so one bad event still never
-- aborts the batch.
--
-- Two layers keep attempts unique: the cursor (a run reads nothing already passed) and the
-- idempotency key (UNIQUE (idempotency_key, attempt_no[, event_txid]): ON CONFLICT DO NOTHING
-- without a target, so whichever unique index the attempt's partition has counts, see 017),
-- so even a re-scan after fn_iu_route_worker_reset_cursor writes no duplicate.
--
-- Cursor sanity: transaction ids restart in another cluster (dump/restore), so stored
-- snapshots are meaningless there. The cursor records pg_control_system().system_identifier
-- at register and reset; a run refuses (IU002) a cursor whose identifier differs or whose
-- snapshots lie ahead of this cluster's next xid, and event rows whose txid lies ahead.
-- The documented fixes: fn_iu_route_worker_reset_cursor('<worker>') (the re-scan is
-- duplicate-free) and fn_iu_event_outbox_rebase_foreign_txids().
--
-- JSON returned:
--   register  worker, event_domain, registered, created, cursor, system_identifier,
--             heartbeat_created, heartbeat{executor_id, executor_kind,
--             expected_cadence_seconds, stale_threshold_seconds}
--   run       worker, event_domain, gated, busy, [reason], [gates], batch_limit, claimed,
--             attempts_written, dead_lettered, dry_run, disabled, skipped, failed, sent,
--             already_attempted (re-scanned, nothing written), caught_up, window_open,
--             idle (nothing claimed and no window open: the run wrote nothing but a due beat),
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
--             cursor_ok, foreign_txid_rows, cursor_hint, heartbeat{...}, last_run_summary.
--             With a worker name that document is returned at the top level (plus
--             checked_at and workers[]); without one: {checked_at, gates, worker_count, workers[]}.
-- Actors (resolved_by, registered_by, reset_by): fn_queue_actor (008).
--
-- SQLSTATEs: 22023 bad argument, P0002 unknown worker / dead letter, 0A000 the delivery
-- seam, IU002 a cursor recorded in another cluster or event rows restored from one.
-- Grants are at the end of the file: PUBLIC executes nothing.

-- +goose Up

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_decide: THE route decision, used by the page statement, the event-by-event
-- fallback and the replay (and mirrored in Go by internal/decision).
--   p_route_key  the matched iu_outbound_route's key, NULL when no route matched
--   p_enabled, p_dry_run  that route's switches (ignored without a route)
-- Returns skipped (no route), disabled (route off), dry_run (a logged decision, nothing
-- delivered) or deliver (hand the event to the delivery seam, which decides sent/failed).
-- Inlinable SQL (IMMUTABLE, no SET): planned into the page statement, no call per event.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_decide(p_route_key text, p_enabled boolean, p_dry_run boolean)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN p_route_key IS NULL THEN 'skipped'
                WHEN NOT p_enabled THEN 'disabled'
                WHEN p_dry_run THEN 'dry_run'
                ELSE 'deliver' END
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_idempotency_key: iu_wrk:{worker}:{route_key}:{event_id}, with 'none' for the
-- route key when no route matched. Unambiguous because worker names carry no ':' (register
-- refuses them), route keys may not be 'none', and the event id is fixed-length and last.
-- Inlinable SQL, like the decision.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_idempotency_key(p_worker_name text, p_route_key text, p_event_id uuid)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT 'iu_wrk:' || p_worker_name || ':' || coalesce(p_route_key, 'none') || ':' || p_event_id::text
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_require_name: the worker-name rule of every function that takes one.
-- A worker name is a bounded, non-blank name (fn_iu_require_name) without ':' (it is part
-- of the idempotency key).
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_require_name(p_caller text, p_worker_name text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
    PERFORM fn_iu_require_name(p_caller, 'p_worker_name', p_worker_name);
    IF position(':' IN p_worker_name) > 0 THEN
        RAISE EXCEPTION '%: p_worker_name % may not contain '':''', p_caller, quote_literal(p_worker_name)
            USING ERRCODE = '22023',
                  HINT = 'The worker name is part of idempotency keys (iu_wrk:{worker}:{route_key}:{event_id}).';
    END IF;
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_not_registered: the one "unknown worker" error (P0002 + the fix).
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_not_registered(p_caller text, p_worker_name text)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION '%: worker % is not registered', p_caller, quote_literal(p_worker_name)
        USING ERRCODE = 'P0002',
              HINT = format('Register it first: SELECT fn_iu_route_worker_register(%L);', p_worker_name);
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_lock_class: the advisory-lock class of this package's route workers
-- ('iu' + 1); the second key is the worker's lock_id, so no two workers share a lock.
-- fn_iu_route_worker_try_lock(p_lock_id): take that lock without waiting (true) or learn
-- that another transaction holds it (false). Both inlinable SQL, so the idle path of a run
-- takes the lock inside an expression, without a call.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_lock_class()
RETURNS integer
LANGUAGE sql IMMUTABLE
AS $$
    SELECT 26997
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_try_lock(p_lock_id integer)
RETURNS boolean
LANGUAGE sql VOLATILE
AS $$
    SELECT pg_try_advisory_xact_lock(fn_iu_route_worker_lock_class(), p_lock_id)
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_lock: one run (or reset) per worker at a time.
--   p_caller       the public function, for the error message
--   p_worker_name  the worker (P0002 when not registered)
--   p_wait         false: try once and return false when another transaction holds it
--                  (a run reports busy at once); true: wait for it (a reset)
-- Takes a transaction-scoped advisory lock keyed by the cursor's lock_id, so it is held
-- until the caller's transaction ends, exactly like a row lock, but writes nothing: an
-- idle run stays read-only (no transaction id, no WAL, no commit flush). Read the cursor
-- row only after this returns true: the statement's fresh snapshot then sees everything
-- the previous holder committed.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_lock(p_caller text, p_worker_name text, p_wait boolean)
RETURNS boolean
LANGUAGE plpgsql
AS $$
DECLARE
    v_id integer;
BEGIN
    SELECT cur.lock_id INTO v_id FROM iu_route_worker_cursor cur WHERE cur.worker_name = p_worker_name;
    IF v_id IS NULL THEN
        PERFORM fn_iu_route_worker_not_registered(p_caller, p_worker_name);
    END IF;
    IF p_wait THEN
        PERFORM pg_advisory_xact_lock(fn_iu_route_worker_lock_class(), v_id);
        RETURN true;
    END IF;
    RETURN fn_iu_route_worker_try_lock(v_id);
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_cursor_ahead: the half of the cursor sanity rule that needs no file
-- read: a stored snapshot or keyset position lies at or beyond this cluster's next
-- transaction id (no transaction of this cluster can have produced it). True when so;
-- false when not, or when the cursor holds no position yet.
-- Part of fn_iu_route_worker_cursor_check; the run's idle probe asks it alone (see there).
-- Inlinable SQL (a scalar expression, so it costs its callers no subplan), owner only.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_cursor_ahead(p_cursor iu_route_worker_cursor)
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT coalesce(pg_snapshot_xmax(p_cursor.done_snapshot) > pg_snapshot_xmax(pg_current_snapshot())
                    OR pg_snapshot_xmax(p_cursor.window_snapshot) > pg_snapshot_xmax(pg_current_snapshot())
                    OR p_cursor.window_txid >= pg_snapshot_xmax(pg_current_snapshot()), false)
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_cursor_check: THE cursor sanity rule (run refuses, health reports).
--   p_cursor  a iu_route_worker_cursor row
-- Returns no row when the stored position belongs to this cluster, else one row: a
-- sentence saying why not. Either the recorded system_identifier differs (dump/restore or
-- pg_upgrade into another cluster), or a stored snapshot or keyset position lies at or
-- beyond this cluster's next transaction id (no transaction of this cluster can have
-- produced it).
-- Internal and unguarded: inlinable SQL (no SECURITY DEFINER, no SET), so a run plans it
-- into its own sanity statement instead of paying a guarded call per run. Nobody but the
-- owner may execute it; its callers (fn_iu_route_worker_run, and
-- fn_iu_route_worker_cursor_problem for the status view) are SECURITY DEFINER entry
-- points that pin search_path and pass the writable-schema guard first.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_cursor_check(p_cursor iu_route_worker_cursor)
RETURNS SETOF text
LANGUAGE sql STABLE
AS $$
    SELECT CASE WHEN p_cursor.system_identifier IS NOT NULL AND p_cursor.system_identifier <> k.sysid
                THEN format('cursor of worker %s was recorded in another cluster (system_identifier %s, this cluster %s)',
                            quote_literal(p_cursor.worker_name), p_cursor.system_identifier, k.sysid)
                ELSE format('cursor of worker %s holds transaction ids ahead of this cluster (stored xmax %s, current %s)',
                            quote_literal(p_cursor.worker_name),
                            coalesce(pg_snapshot_xmax(p_cursor.done_snapshot), pg_snapshot_xmax(p_cursor.window_snapshot)),
                            k.xmax) END
      FROM (SELECT s.system_identifier AS sysid, pg_snapshot_xmax(pg_current_snapshot()) AS xmax
              FROM pg_control_system() s) k
     WHERE (p_cursor.system_identifier IS NOT NULL AND p_cursor.system_identifier <> k.sysid)
        OR fn_iu_route_worker_cursor_ahead(p_cursor)
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_cursor_problem: fn_iu_route_worker_cursor_check as one value (NULL
-- when the cursor is sane) for v_iu_route_worker_status, whose reader (workflow_admin)
-- executes it. SECURITY DEFINER: pg_control_system() is not for every role; guarded,
-- because it is granted.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_cursor_problem(p_cursor iu_route_worker_cursor)
RETURNS text
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    -- The guard first (a CASE evaluates it before the check).
    SELECT CASE WHEN fn_iu_require_trusted_search_path('fn_iu_route_worker_cursor_problem') THEN
           (SELECT k FROM fn_iu_route_worker_cursor_check(p_cursor) k LIMIT 1) END
$$;
-- +goose StatementEnd

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
-- fn_iu_route_worker_page: the next page of the window with each event's route and
-- decision (fn_iu_route_decide over the route resolved by (domain, type, stream); NULL
-- route fields when none matches). The one query both decide_page and decide_each read.
-- Inlinable SQL, like the claim it wraps.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_page(
    p_event_domain text,
    p_done         pg_snapshot,
    p_window       pg_snapshot,
    p_after_txid   xid8,
    p_after_id     uuid,
    p_limit        integer
)
RETURNS TABLE (id uuid, txid xid8, created_at timestamptz, route_key text, route_kind text, decision text)
LANGUAGE sql STABLE
AS $$
    SELECT p.id, p.txid, p.created_at, rt.route_key, rt.route_kind,
           fn_iu_route_decide(rt.route_key, rt.enabled, rt.dry_run)
      FROM fn_iu_route_worker_claim(p_event_domain, p_done, p_window, p_after_txid, p_after_id, p_limit) p
      LEFT JOIN iu_outbound_route rt
             ON rt.event_domain = p_event_domain
            AND rt.event_type = p.event_type
            AND rt.event_stream = p.event_stream
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- Internal: what is still waiting for a worker (backlog) and how old the oldest of it is.
-- Rows not visible in done_snapshot, minus what the open window already consumed; only
-- committed rows count (the statement's snapshot). The count stops at 10,000 (capped:
-- true), so a look at a worker that never ran, or is far behind, costs the same on a
-- 10-million-row log as on a small one; oldest_created_at is then the oldest of those.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_pending(
    p_event_domain text,
    p_done         pg_snapshot,
    p_window       pg_snapshot,
    p_after_txid   xid8,
    p_after_id     uuid
)
RETURNS TABLE (pending bigint, oldest_created_at timestamptz, capped boolean)
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = public, pg_temp
-- Planned with the argument values, every call: a generic plan cannot know that
-- txid >= xmax(done) selects only the newest rows of the domain and reads the whole
-- outbox to count a caught-up worker's zero rows. With the values, both branches are
-- index range scans on (event_domain, txid, id) whose cost follows the backlog.
SET plan_cache_mode = force_custom_plan
-- A few index probes: starting parallel workers costs more than the whole answer.
SET max_parallel_workers_per_gather = 0
AS $$
DECLARE
    v_xip    xid8;
    v_n      bigint;
    v_min    timestamptz;
    v_total  bigint := 0;
    v_oldest timestamptz;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_iu_route_worker_pending');
    -- (a) transactions in progress when done was taken: one index probe per xid, each
    -- planned with its own value (usually none or a handful)
    FOREACH v_xip IN ARRAY coalesce(ARRAY(SELECT pg_snapshot_xip(p_done)), '{}') LOOP
        SELECT count(*), min(w.created_at) INTO v_n, v_min
          FROM (SELECT o.created_at
                  FROM event_outbox o
                 WHERE o.event_domain = p_event_domain AND o.txid = v_xip
                   AND (p_window IS NULL OR p_after_txid IS NULL
                        OR NOT pg_visible_in_snapshot(o.txid, p_window)
                        OR (o.txid, o.id) > (p_after_txid, p_after_id))
                 LIMIT 10001) w;
        v_total := v_total + v_n;
        v_oldest := least(v_oldest, v_min);
        EXIT WHEN v_total > 10000;
    END LOOP;
    -- (b) transactions that started after done: one range, in index order, cut at the cap
    IF v_total <= 10000 THEN
        SELECT count(*), min(w.created_at) INTO v_n, v_min
          FROM (SELECT o.created_at
                  FROM event_outbox o
                 WHERE o.event_domain = p_event_domain
                   AND o.txid >= pg_snapshot_xmax(coalesce(p_done, '1:1:'::pg_snapshot))
                   AND (p_window IS NULL OR p_after_txid IS NULL
                        OR NOT pg_visible_in_snapshot(o.txid, p_window)
                        OR (o.txid, o.id) > (p_after_txid, p_after_id))
                 ORDER BY o.txid, o.id
                 LIMIT 10001 - v_total) w;
        v_total := v_total + v_n;
        v_oldest := least(v_oldest, v_min);
    END IF;
    pending := least(v_total, 10000);
    oldest_created_at := v_oldest;
    capped := v_total > 10000;
    RETURN NEXT;
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- Internal: the transactions that hold a worker's windows open — in-progress xids of the
-- stored snapshots that are still running, with their backend (pid, age) when visible.
-- pid and backend_xid are visible to any role; xact_start, state and the age of another
-- role's session need the executing role to be superuser or a member of pg_read_all_stats,
-- otherwise they are null (the txid and the count are always there). Its callers (run,
-- health) are SECURITY DEFINER, so that role is the function owner (the migrating role).
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_holders(p_done pg_snapshot, p_window pg_snapshot)
RETURNS jsonb
LANGUAGE plpgsql STABLE
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
-- fn_iu_route_worker_foreign_rows: committed rows of the domain whose txid lies at or
-- beyond this cluster's next transaction id (at most one: the question is whether any
-- exist). No transaction of this cluster can have written them (a visible row committed
-- before the statement's snapshot, so its txid is below xmax), so they were restored from
-- another cluster: left alone they would stay invisible to every window. One probe at the
-- top of the (event_domain, txid, id) index; normally it finds nothing.
-- Internal and unguarded, inlinable SQL like fn_iu_route_worker_cursor_check (and for the
-- same reason): executed by nobody but the owner, through guarded entry points.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_foreign_rows(p_event_domain text)
RETURNS SETOF xid8
LANGUAGE sql STABLE
AS $$
    SELECT o.txid
      FROM event_outbox o
     WHERE o.event_domain = p_event_domain
       AND o.txid >= pg_snapshot_xmax(pg_current_snapshot())
       AND o.txid IS DISTINCT FROM pg_current_xact_id_if_assigned()
     LIMIT 1
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_foreign_txids: fn_iu_route_worker_foreign_rows as a yes/no for
-- v_iu_route_worker_status, whose reader (workflow_admin) executes it; guarded, because
-- it is granted.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_foreign_txids(p_event_domain text)
RETURNS boolean
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    -- The guard first (a CASE evaluates it before the probe; a WHERE clause would not promise that).
    SELECT CASE WHEN fn_iu_require_trusted_search_path('fn_iu_route_worker_foreign_txids') THEN
           EXISTS (SELECT 1 FROM fn_iu_route_worker_foreign_rows(p_event_domain)) END
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
    v_me   xid8;
    v_rows bigint;
    v_doms jsonb;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_iu_event_outbox_rebase_foreign_txids');
    v_me := pg_current_xact_id();
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
-- iu_route_run_tally: what a run has done so far, threaded through the page functions
-- (each takes the tally and returns it with its page added), so the run itself is a short
-- loop. deliver_* hold the current page's events bound for the delivery seam.
-- ---------------------------------------------------------------------------------------
CREATE TYPE iu_route_run_tally AS (
    claimed             integer,
    attempts_written    integer,
    dry_run             integer,
    disabled            integer,
    skipped             integer,
    failed              integer,
    sent                integer,
    dead_lettered       integer,
    already_attempted   integer,      -- re-scanned after a reset: the key exists, nothing written
    last_txid           xid8,         -- the keyset position after the newest claimed row
    last_id             uuid,
    last_created_at     timestamptz,
    deliver_ids         uuid[],
    deliver_route_keys  text[],
    deliver_route_kinds text[]
);

-- fn_iu_route_run_tally_zero(): the tally of a run that has done nothing yet (the full
-- pass starts from it; the idle path reports it). Inlinable SQL: a constant.
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_run_tally_zero()
RETURNS iu_route_run_tally
LANGUAGE sql IMMUTABLE
AS $$
    SELECT ROW(0, 0, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL)::iu_route_run_tally
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_event(p_event_id) -> jsonb: THE event of an id, as the whole row (NULL when
-- no row has that id). An id is unique only within a history partition (017), so a
-- producer allowed to choose ids could store a second row under an id it learned; the
-- event is the oldest row of the id (a copy is always younger: it can only be written
-- after the original committed), never whichever row an index scan meets first. The
-- failure path (the dead letter's snapshot) and the delivery path read the event through
-- it, once per event. Internal.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_event(p_event_id uuid)
RETURNS jsonb
LANGUAGE sql STABLE
AS $$
    SELECT to_jsonb(e) FROM event_outbox e WHERE e.id = p_event_id ORDER BY e.txid LIMIT 1
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_fail: record one failure.
--   p_tally   the run's tally; returned with failed / attempts_written / dead_lettered (or
--             already_attempted, on a re-scan) counted
--   p_worker_name, p_event_id, p_route_key, p_route_kind, p_idempotency_key  the event
--   p_error_code, p_error_message  the SQLSTATE and message that was raised
--   p_stage   'decide' (the audit insert failed) or 'deliver' (the seam raised)
-- Writes a failed iu_route_attempt and a dead letter carrying the whole event row (so a
-- replay needs nothing from event_outbox). Both are keyed by the idempotency key, so a
-- re-scan after a cursor reset writes neither twice.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_fail(
    p_tally           iu_route_run_tally,
    p_worker_name     text,
    p_event_id        uuid,
    p_route_key       text,
    p_route_kind      text,
    p_idempotency_key text,
    p_error_code      text,
    p_error_message   text,
    p_stage           text
)
RETURNS iu_route_run_tally
LANGUAGE plpgsql
AS $$
DECLARE
    t      iu_route_run_tally := p_tally;
    v_snap jsonb;
    v_n    integer;
BEGIN
    v_snap := fn_iu_route_event(p_event_id);

    INSERT INTO iu_route_attempt (event_ref, worker_name, route_key, route_kind, status, idempotency_key,
                                  detail, error_code, error_message, event_txid)
    VALUES (p_event_id, p_worker_name, p_route_key, p_route_kind, 'failed', p_idempotency_key,
            jsonb_build_object('stage', p_stage), p_error_code, p_error_message, (v_snap->>'txid')::xid8)
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n = 1 THEN
        t.attempts_written := t.attempts_written + 1;
        t.failed := t.failed + 1;
    ELSE
        t.already_attempted := t.already_attempted + 1;
    END IF;

    INSERT INTO iu_route_dead_letter (worker_name, event_id, event_domain, event_type, event_stream, route_key,
                                      idempotency_key, event_snapshot, error_code, error_message)
    VALUES (p_worker_name, p_event_id, v_snap->>'event_domain', v_snap->>'event_type', v_snap->>'event_stream',
            p_route_key, p_idempotency_key, v_snap, p_error_code, p_error_message)
    ON CONFLICT (idempotency_key) DO NOTHING;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    t.dead_lettered := t.dead_lettered + v_n;
    RETURN t;
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_decide_page: claim, decide and audit one page in ONE statement.
--   p_tally        the run's tally, returned with this page added
--   p_worker_name, p_event_domain   the worker and the domain its cursor consumes
--   p_done, p_window, p_after_txid, p_after_id, p_limit   the window and the keyset position
--   p_guarded      false: the plain INSERT (the common case: nothing of the page was ever
--                  attempted); true: INSERT ... ON CONFLICT DO NOTHING (a re-scan)
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
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_decide_page(
    p_tally        iu_route_run_tally,
    p_worker_name  text,
    p_event_domain text,
    p_done         pg_snapshot,
    p_window       pg_snapshot,
    p_after_txid   xid8,
    p_after_id     uuid,
    p_limit        integer,
    p_guarded      boolean
)
RETURNS iu_route_run_tally
LANGUAGE plpgsql
AS $$
DECLARE
    t          iu_route_run_tally := p_tally;
    v_page     integer;
    k_dry      integer;
    k_disabled integer;
    k_skipped  integer;
    l_txid     xid8;
    l_id       uuid;
    l_created  timestamptz;
BEGIN
    IF NOT p_guarded THEN
        -- Every non-deliver event of the page is written (or the statement raises), so the
        -- counts are the page's decisions, read in the same pass as the deliver list.
        WITH decided AS MATERIALIZED (
            SELECT * FROM fn_iu_route_worker_page(p_event_domain, p_done, p_window, p_after_txid, p_after_id, p_limit)
        ), ins AS (
            INSERT INTO iu_route_attempt (event_ref, worker_name, route_key, route_kind, status, idempotency_key, event_txid)
            SELECT d.id, p_worker_name, d.route_key, d.route_kind, d.decision,
                   fn_iu_route_idempotency_key(p_worker_name, d.route_key, d.id), d.txid
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
            SELECT * FROM fn_iu_route_worker_page(p_event_domain, p_done, p_window, p_after_txid, p_after_id, p_limit)
        ), ins AS (
            INSERT INTO iu_route_attempt (event_ref, worker_name, route_key, route_kind, status, idempotency_key, event_txid)
            SELECT d.id, p_worker_name, d.route_key, d.route_kind, d.decision,
                   fn_iu_route_idempotency_key(p_worker_name, d.route_key, d.id), d.txid
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
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_decide_each: the fallback when the page statement failed. Same
-- parameters, same result as fn_iu_route_worker_decide_page, but each event is decided and
-- audited in its own exception block, so one bad event becomes a failed attempt and a dead
-- letter (fn_iu_route_worker_fail) and the rest of the page is routed.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_decide_each(
    p_tally        iu_route_run_tally,
    p_worker_name  text,
    p_event_domain text,
    p_done         pg_snapshot,
    p_window       pg_snapshot,
    p_after_txid   xid8,
    p_after_id     uuid,
    p_limit        integer
)
RETURNS iu_route_run_tally
LANGUAGE plpgsql
AS $$
DECLARE
    t       iu_route_run_tally := p_tally;
    e       record;
    v_key   text;
    v_n     integer;
    v_state text;
    v_msg   text;
BEGIN
    t.deliver_ids := '{}'; t.deliver_route_keys := '{}'; t.deliver_route_kinds := '{}';
    FOR e IN
        SELECT p.* FROM fn_iu_route_worker_page(p_event_domain, p_done, p_window, p_after_txid, p_after_id, p_limit) p
         ORDER BY p.txid, p.id
    LOOP
        t.claimed := t.claimed + 1;
        t.last_txid := e.txid; t.last_id := e.id; t.last_created_at := e.created_at;
        IF e.decision = 'deliver' THEN
            t.deliver_ids := t.deliver_ids || e.id;
            t.deliver_route_keys := t.deliver_route_keys || e.route_key;
            t.deliver_route_kinds := t.deliver_route_kinds || e.route_kind;
            CONTINUE;
        END IF;
        v_key := fn_iu_route_idempotency_key(p_worker_name, e.route_key, e.id);
        BEGIN
            INSERT INTO iu_route_attempt (event_ref, worker_name, route_key, route_kind, status, idempotency_key, event_txid)
            VALUES (e.id, p_worker_name, e.route_key, e.route_kind, e.decision, v_key, e.txid)
            ON CONFLICT DO NOTHING;
            GET DIAGNOSTICS v_n = ROW_COUNT;
            IF v_n = 0 THEN
                t.already_attempted := t.already_attempted + 1;
            ELSE
                t.attempts_written := t.attempts_written + 1;
                CASE e.decision
                    WHEN 'dry_run'  THEN t.dry_run := t.dry_run + 1;
                    WHEN 'disabled' THEN t.disabled := t.disabled + 1;
                    ELSE t.skipped := t.skipped + 1;
                END CASE;
            END IF;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
            t := fn_iu_route_worker_fail(t, p_worker_name, e.id, e.route_key, e.route_kind, v_key,
                                         v_state, v_msg, 'decide');
        END;
    END LOOP;
    RETURN t;
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_deliver_page: hand the page's deliver_* events to the delivery seam,
-- one isolated block each (only enabled, dry_run = false routes get here). Success writes a
-- 'sent' attempt; anything raised becomes a failed attempt + dead letter. An event already
-- attempted (a re-scan) is never handed over twice. Returns the tally with deliver_* spent.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_deliver_page(p_tally iu_route_run_tally, p_worker_name text)
RETURNS iu_route_run_tally
LANGUAGE plpgsql
AS $$
DECLARE
    t       iu_route_run_tally := p_tally;
    v_key   text;
    v_event jsonb;
    v_res   jsonb;
    v_state text;
    v_msg   text;
BEGIN
    FOR i IN 1 .. coalesce(array_length(t.deliver_ids, 1), 0) LOOP
        v_key := fn_iu_route_idempotency_key(p_worker_name, t.deliver_route_keys[i], t.deliver_ids[i]);
        IF EXISTS (SELECT 1 FROM iu_route_attempt a WHERE a.idempotency_key = v_key) THEN
            t.already_attempted := t.already_attempted + 1;
            CONTINUE;
        END IF;
        BEGIN
            v_event := fn_iu_route_event(t.deliver_ids[i]);
            v_res := fn_iu_route_deliver(v_event, t.deliver_route_keys[i], t.deliver_route_kinds[i], v_key);
            INSERT INTO iu_route_attempt (event_ref, worker_name, route_key, route_kind, status, idempotency_key, detail,
                                          event_txid)
            VALUES (t.deliver_ids[i], p_worker_name, t.deliver_route_keys[i], t.deliver_route_kinds[i], 'sent', v_key,
                    coalesce(v_res, '{}'::jsonb), (v_event->>'txid')::xid8)
            ON CONFLICT DO NOTHING;
            t.attempts_written := t.attempts_written + 1;
            t.sent := t.sent + 1;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
            t := fn_iu_route_worker_fail(t, p_worker_name, t.deliver_ids[i], t.deliver_route_keys[i],
                                         t.deliver_route_kinds[i], v_key, v_state, v_msg, 'deliver');
        END;
    END LOOP;
    t.deliver_ids := NULL; t.deliver_route_keys := NULL; t.deliver_route_kinds := NULL;
    RETURN t;
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_beat_due: THE rule for when a run beats its heartbeat. One row when a
-- beat is due (none when not): the last beat is older than a quarter of the worker's
-- expected cadence (15 s at the default 60 s: far inside any stale threshold, so the
-- stale-check still sees a polling worker as fresh), no run has beaten it yet, its status
-- is not ok, the gate state changed (p_reason, the payload's reason: NULL for an ungated
-- run), or the row is missing (someone removed it: the beat re-registers it). Otherwise
-- the row is only read: a worker polled every 100 ms does not write its heartbeat ten
-- times a second.
-- Inlinable SQL, so an idle run asks with one planned probe before it builds a payload.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_beat_due(p_worker_name text, p_reason text)
RETURNS SETOF boolean
LANGUAGE sql STABLE
AS $$
    SELECT true
      FROM (SELECT 1) one
      LEFT JOIN queue_heartbeat h ON h.executor_id = p_worker_name
     WHERE h.executor_id IS NULL
        OR NOT (h.ticks_total > 0 AND h.status = 'ok'
                AND now() - h.last_beat_at < make_interval(secs => h.expected_cadence_seconds / 4.0)
                AND (h.last_beat_payload->>'reason') IS NOT DISTINCT FROM p_reason)
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_beat: beat the worker's queue_heartbeat row when a beat is due
-- (fn_iu_route_worker_beat_due), and re-register it with the PG_worker defaults if someone
-- removed it. An invoked worker is alive, so a gated no-op beats too, with the reason in
-- the payload.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_beat(p_worker_name text, p_event_domain text, p_payload jsonb)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM fn_iu_route_worker_beat_due(p_worker_name, p_payload->>'reason')) THEN
        RETURN; -- not due
    END IF;
    UPDATE queue_heartbeat hb
       SET last_beat_at      = now(),
           ticks_total       = hb.ticks_total + 1,
           status            = 'ok',
           last_beat_payload = p_payload
     WHERE hb.executor_id = p_worker_name;
    IF NOT FOUND THEN
        INSERT INTO queue_heartbeat (executor_id, executor_kind, domain_scope, status, last_beat_at,
                                     last_beat_payload, ticks_total, expected_cadence_seconds,
                                     stale_threshold_seconds)
        SELECT p_worker_name, 'PG_worker', ARRAY[p_event_domain], 'ok', now(), p_payload, 1,
               d.expected_cadence_seconds, d.stale_threshold_seconds
          FROM fn_queue_heartbeat_defaults('PG_worker') d
        ON CONFLICT (executor_id) DO NOTHING;
    END IF;
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_attempt_tally_add: count p_attempts new attempt rows (p_replays of them
-- replays) of one worker and status into iu_route_attempt_tally, in the caller's
-- transaction. Called by every writer of iu_route_attempt (the run, the replay).
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_attempt_tally_add(p_worker_name text, p_status text, p_attempts integer, p_replays integer)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    -- PL/pgSQL, not SQL: a SQL function whose body is an INSERT is never inlined, so it is
    -- parsed and planned again in every statement that calls it (every busy run); PL/pgSQL
    -- keeps the plan for the session.
    INSERT INTO iu_route_attempt_tally AS t (worker_name, status, attempts, replays)
    VALUES (p_worker_name, p_status, p_attempts, p_replays)
    ON CONFLICT (worker_name, status) DO UPDATE
       SET attempts = t.attempts + EXCLUDED.attempts,
           replays  = t.replays + EXCLUDED.replays,
           last_at  = now();
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_advance: move the cursor and count the run, in the run's transaction
-- (so the position moves atomically with the attempts), then beat the heartbeat.
--   p_done     the new done snapshot, NULL when no window closed in this run
--   p_window, p_after_txid, p_after_id   the open window and the position in it (NULLs: none)
--   p_tally    what the run did;  p_summary  the run's JSON summary, kept for operators
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_advance(
    p_worker_name  text,
    p_event_domain text,
    p_done         pg_snapshot,
    p_window       pg_snapshot,
    p_after_txid   xid8,
    p_after_id     uuid,
    p_tally        iu_route_run_tally,
    p_summary      jsonb
)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    UPDATE iu_route_worker_cursor cur
       SET done_snapshot     = coalesce(p_done, cur.done_snapshot),
           window_snapshot   = p_window,
           window_txid       = p_after_txid,
           window_event_id   = p_after_id,
           system_identifier = coalesce(cur.system_identifier, (SELECT s.system_identifier FROM pg_control_system() s)),
           last_created_at   = coalesce(p_tally.last_created_at, cur.last_created_at),
           last_event_id     = coalesce(p_tally.last_id, cur.last_event_id),
           events_seen       = cur.events_seen + p_tally.claimed,
           attempts_written  = cur.attempts_written + p_tally.attempts_written,
           dead_lettered     = cur.dead_lettered + p_tally.dead_lettered,
           runs_total        = cur.runs_total + 1,
           last_run_at       = now(),
           last_run_summary  = p_summary
     WHERE cur.worker_name = p_worker_name;

    PERFORM fn_iu_route_attempt_tally_add(p_worker_name, x.status, x.n, 0)
       FROM (VALUES ('dry_run', p_tally.dry_run), ('disabled', p_tally.disabled), ('skipped', p_tally.skipped),
                    ('failed', p_tally.failed), ('sent', p_tally.sent)) AS x(status, n)
      WHERE x.n > 0;

    PERFORM fn_iu_route_worker_beat(p_worker_name, p_event_domain,
        jsonb_build_object('claimed', p_tally.claimed, 'attempts_written', p_tally.attempts_written,
                           'dead_lettered', p_tally.dead_lettered, 'caught_up', p_window IS NULL,
                           'held_open_count', jsonb_array_length(p_summary->'held_open_by')));
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_register(p_worker_name, p_event_domain DEFAULT 'iu') -> jsonb
-- Creates the worker's cursor at the start of the stream and its PG_worker heartbeat row,
-- so a worker that stops running is noticed. Idempotent: a re-register keeps the cursor and
-- the heartbeat's history (ticks, last beat, pause). A worker consumes one domain.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_register(p_worker_name text, p_event_domain text DEFAULT 'iu')
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_sysid   bigint;
    v_actor   text;
    v_created integer;
    v_hb      integer;
    c         iu_route_worker_cursor%ROWTYPE;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_iu_route_worker_register');
    v_sysid := (SELECT s.system_identifier FROM pg_control_system() s);
    v_actor := fn_queue_actor(NULL, 'fn_iu_route_worker_register');
    PERFORM fn_iu_route_worker_require_name('fn_iu_route_worker_register', p_worker_name);
    PERFORM fn_iu_require_name('fn_iu_route_worker_register', 'p_event_domain', p_event_domain);

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

    INSERT INTO queue_heartbeat (executor_id, executor_kind, domain_scope, expected_cadence_seconds,
                                 stale_threshold_seconds, registered_by, last_beat_payload)
    SELECT p_worker_name, 'PG_worker', ARRAY[p_event_domain], d.expected_cadence_seconds,
           d.stale_threshold_seconds, v_actor, jsonb_build_object('registered', true)
      FROM fn_queue_heartbeat_defaults('PG_worker') d
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
-- fn_iu_route_worker_idle_probe(p_worker_name): the caught-up poll's first question, about
-- the worker itself, in one planned statement. Returns the worker's lock_id, event_domain
-- and done_snapshot; done_waits: a transaction in done_snapshot's in-progress list is still
-- running (the position waits on it, fn_iu_route_worker_holders says who it is); and
-- quiet = true only when
--   both gates are open (fn_iu_gate_open over the two keys, as the gate readers read them),
--   no window is open, the caller's transaction has no transaction id (its own uncommitted
--   rows are the full pass's business), no stored position lies ahead of this cluster's
--   transaction ids (fn_iu_route_worker_cursor_ahead) and no heartbeat is due
--   (fn_iu_route_worker_beat_due).
-- The other half of the cluster sanity rule, the recorded system_identifier, is left to
-- the full pass: reading it means reading the control file from disk (a fifth of an idle
-- run), and it cannot hide anything here. A cursor from another cluster whose positions lie
-- below this cluster's transaction ids sees every new event of this cluster as new (its
-- txid is at or above the stored done_snapshot's xmax), so the first event, like the first
-- due beat, sends the run to the full pass, which refuses with IU002 before it routes.
-- The outbox is asked separately (fn_iu_route_worker_idle_rows), with the position as
-- plain values, so partition pruning happens when the statement starts.
-- Reads the cursor without the worker's lock: the caller takes the lock afterwards and
-- only trusts a quiet answer. A run that committed between this statement's snapshot and
-- the lock either changed nothing, or routed events that are visible to the outbox
-- question's snapshot and not to the stale done_snapshot, so that question finds them
-- and the full pass re-reads the cursor under the lock.
-- No rows: the worker is not registered (the full pass says so, with the fix).
-- Internal and unguarded: inlinable SQL, executed by nobody but the owner; its one caller,
-- fn_iu_route_worker_run, is SECURITY DEFINER and passed the guard.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_idle_probe(p_worker_name text)
RETURNS TABLE (lock_id integer, event_domain text, done_snapshot pg_snapshot, done_waits boolean, quiet boolean)
LANGUAGE sql STABLE
AS $$
    SELECT c.lock_id, c.event_domain, c.done_snapshot,
           EXISTS (SELECT 1 FROM pg_snapshot_xip(c.done_snapshot) AS x(xip_txid)
                    WHERE NOT pg_visible_in_snapshot(x.xip_txid, pg_current_snapshot())),
           fn_iu_gate_open((SELECT g.value FROM dot_config g WHERE g.key = 'iu_core.routes_enabled'))
           AND fn_iu_gate_open((SELECT g.value FROM dot_config g WHERE g.key = 'iu_core.route_worker_enabled'))
           AND c.window_snapshot IS NULL
           AND pg_current_xact_id_if_assigned() IS NULL
           AND NOT fn_iu_route_worker_cursor_ahead(c)
           AND NOT EXISTS (SELECT 1 FROM fn_iu_route_worker_beat_due(p_worker_name, NULL))
      FROM iu_route_worker_cursor c
     WHERE c.worker_name = p_worker_name
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_idle_rows(p_event_domain, p_done, p_now): the caught-up poll's second
-- question: a row of the domain that ends it. One row per kind found, none when the
-- domain holds nothing a window opened at p_now would claim and no row restored from
-- another cluster. It asks the claim's two questions without its order, keyset and limit,
-- and is allowed to be stricter than them, never quieter:
--   (a) late_commit: a transaction in p_done's in-progress list that has completed by
--       p_now and wrote a row (one index probe per such transaction)
--   (b) new: any row at or above p_done's xmax that the statement can see. That is every
--       row the claim's second range would return (committed before p_now: visible in it),
--       and also every committed row whose txid lies at or beyond this cluster's next
--       transaction id, i.e. fn_iu_route_worker_foreign_rows' question (rows restored
--       from another cluster), asked in the same index range instead of a second one.
--       Rows still being written by producers are not visible and do not count; the
--       caller's own rows do (the run asks only when its transaction has written nothing).
-- It may only ever be stricter than the claim: whatever fn_iu_route_worker_claim would
-- return is found here (a test holds the two together). Every branch bounds txid by
-- values known when the statement starts, so the history partitions outside those bounds
-- are pruned before any scan is built and the cost stays flat however many partitions
-- history keeps. When p_done lists no transaction in progress, (a) has nothing to ask: its
-- upper bound is then 0, below every partition its lower bound keeps, so no scan is
-- started for it at all (xmin = xmax alone would still leave the partition holding that
-- one value).
-- Internal and unguarded: inlinable SQL, owner only, called by fn_iu_route_worker_run.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_idle_rows(p_event_domain text, p_done pg_snapshot, p_now pg_snapshot)
RETURNS SETOF text
LANGUAGE sql STABLE
AS $$
    SELECT 'late_commit'
      FROM pg_snapshot_xip(p_done) AS x(xip_txid)
     CROSS JOIN LATERAL (SELECT 1 FROM event_outbox o
                          WHERE o.event_domain = p_event_domain
                            AND o.txid = x.xip_txid
                            AND o.txid >= pg_snapshot_xmin(p_done)
                            AND o.txid < CASE WHEN pg_snapshot_xmin(p_done) < pg_snapshot_xmax(p_done)
                                              THEN pg_snapshot_xmax(p_done) ELSE '0'::xid8 END
                          LIMIT 1) e          -- LATERAL ... LIMIT 1: one probe, never a hash of the domain
     WHERE pg_visible_in_snapshot(x.xip_txid, p_now)
    UNION ALL
    SELECT 'new'
      FROM (SELECT 1 FROM event_outbox o
             WHERE o.event_domain = p_event_domain
               AND o.txid >= pg_snapshot_xmax(coalesce(p_done, '1:1:'::pg_snapshot))
             LIMIT 1) b
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_summary_counts: what a run did (its tally, its windows, whether it
-- fell back and why, whether it was idle), the part of the summary that names neither the
-- worker nor the moment.
-- (A NULL value is written as JSON null, as jsonb_build_object would write it.)
-- Why JSON text and not jsonb_build_object: jsonb_build_object is STABLE, and a STABLE call
-- is neither folded nor inlined into an IMMUTABLE function. Text made of integers and
-- booleans needs no escaping, and every step of it (the casts, ||, the jsonb input, and
-- jsonb_object for the fallback's error text) is IMMUTABLE, so this function is both:
-- called with constants, as the idle path calls it (the zero tally, one window opened and
-- closed, no fallback), PostgreSQL folds it into one constant when the run's plan is made,
-- so an idle run builds only the keys that vary; called with the full pass's values it is
-- inlined, no call.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_summary_counts(
    p_tally        iu_route_run_tally,
    p_window_open  boolean,
    p_opened       integer,
    p_closed       integer,
    p_fallback_err text,
    p_idle         boolean
)
RETURNS jsonb
LANGUAGE sql IMMUTABLE
AS $$
    SELECT ('{"gated": false, "busy": false'
            || ', "claimed": ' || coalesce((p_tally).claimed::text, 'null')
            || ', "attempts_written": ' || coalesce((p_tally).attempts_written::text, 'null')
            || ', "dead_lettered": ' || coalesce((p_tally).dead_lettered::text, 'null')
            || ', "dry_run": ' || coalesce((p_tally).dry_run::text, 'null')
            || ', "disabled": ' || coalesce((p_tally).disabled::text, 'null')
            || ', "skipped": ' || coalesce((p_tally).skipped::text, 'null')
            || ', "failed": ' || coalesce((p_tally).failed::text, 'null')
            || ', "sent": ' || coalesce((p_tally).sent::text, 'null')
            || ', "already_attempted": ' || coalesce((p_tally).already_attempted::text, 'null')
            || ', "caught_up": ' || coalesce((NOT p_window_open)::text, 'null')
            || ', "window_open": ' || coalesce(p_window_open::text, 'null')
            || ', "windows_opened": ' || coalesce(p_opened::text, 'null')
            || ', "windows_closed": ' || coalesce(p_closed::text, 'null')
            || ', "fallback": ' || coalesce((p_fallback_err IS NOT NULL)::text, 'null')
            || ', "idle": ' || coalesce(p_idle::text, 'null')
            || '}')::jsonb
        -- The one string: jsonb_object (IMMUTABLE too) escapes it.
        || CASE WHEN p_fallback_err IS NOT NULL
                THEN jsonb_object(ARRAY['fallback_error'], ARRAY[left(p_fallback_err, 500)])
                ELSE '{}'::jsonb END
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_summary: the summary of a run that was not gated and not busy, the
-- one shape both the idle path and the full pass return: the counts
-- (fn_iu_route_worker_summary_counts) and the keys that name the worker, its domain, the
-- transactions holding its position back and the moment.
-- Inlinable SQL (the caller passes plain values: computed holders, not a call), so
-- building it costs no call.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_summary(
    p_worker_name  text,
    p_event_domain text,
    p_batch_limit  integer,
    p_tally        iu_route_run_tally,
    p_window_open  boolean,
    p_opened       integer,
    p_closed       integer,
    p_fallback_err text,
    p_idle         boolean,
    p_holders      jsonb
)
RETURNS jsonb
LANGUAGE sql STABLE
AS $$
    SELECT fn_iu_route_worker_summary_counts(p_tally, p_window_open, p_opened, p_closed, p_fallback_err, p_idle)
        || jsonb_build_object(
               'worker', p_worker_name,
               'event_domain', p_event_domain,
               'batch_limit', p_batch_limit,
               'held_open_count', jsonb_array_length(p_holders),
               'held_open_by', p_holders,
               'run_at', now())
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_pass(p_worker_name, p_batch_limit) -> jsonb summary: the full pass of
-- fn_iu_route_worker_run, for every run its idle path does not answer. Internal (nobody
-- but the owner may execute it); it runs inside the run, under its pinned search_path and
-- plan_cache_mode, after its guard and batch-limit check; it checks the worker name first.
--   1. the worker's advisory lock, without waiting: when another run holds it,
--      {"busy": true} at once (no wait, no beat: the run holding it beats); not registered:
--      P0002 with the register call as HINT
--   2. the dual fail-closed gate (master AND worker): closed -> {"gated": true, "reason"},
--      nothing claimed, the cursor untouched, the heartbeat beaten (an invoked worker is alive)
--   3. cursor sanity and foreign event rows (IU002, with the fix as HINT)
--   4. pages until the batch is full or the windows are exhausted: decide_page (or
--      decide_each when the page statement fails), then deliver_page
--   5. idle (nothing claimed, no window was open): nothing written but a due heartbeat;
--      otherwise fn_iu_route_worker_advance: the cursor, the counters, the heartbeat
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_pass(p_worker_name text, p_batch_limit integer)
RETURNS jsonb
LANGUAGE plpgsql
AS $$
DECLARE
    c              iu_route_worker_cursor%ROWTYPE;
    t              iu_route_run_tally := fn_iu_route_run_tally_zero();
    v_routes_on    boolean;
    v_worker_on    boolean;
    v_reason       text;
    v_problem      text;
    v_foreign      boolean;
    v_done         pg_snapshot;
    v_done_moved   boolean := false;
    v_window       pg_snapshot;
    v_after_txid   xid8;
    v_after_id     uuid;
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
BEGIN
    PERFORM fn_iu_route_worker_require_name('fn_iu_route_worker_run', p_worker_name);
    -- One run per worker at a time: a second run never waits, it reports busy.
    IF NOT fn_iu_route_worker_lock('fn_iu_route_worker_run', p_worker_name, false) THEN
        RETURN jsonb_build_object('worker', p_worker_name, 'gated', false, 'busy', true,
                                  'reason', 'another run of this worker is in progress',
                                  'claimed', 0, 'attempts_written', 0, 'dead_lettered', 0,
                                  'dry_run', 0, 'disabled', 0, 'skipped', 0, 'failed', 0, 'sent', 0);
    END IF;
    SELECT * INTO c FROM iu_route_worker_cursor cur WHERE cur.worker_name = p_worker_name;

    -- Dual fail-closed gate. A gated run is a clean no-op that still beats the heartbeat.
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

    -- Cursor sanity (the stored position must belong to this cluster) and rows restored
    -- from another cluster, in one statement: both checks are inlined, unguarded internals
    -- (this function passed the guard above).
    SELECT (SELECT k FROM fn_iu_route_worker_cursor_check(c) k LIMIT 1),
           EXISTS (SELECT 1 FROM fn_iu_route_worker_foreign_rows(c.event_domain))
      INTO v_problem, v_foreign;
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
        v_page_limit := p_batch_limit - t.claimed;
        v_before     := t.claimed;

        IF v_opened_here AND v_after_txid IS NULL
           AND NOT EXISTS (SELECT 1 FROM fn_iu_route_worker_claim(c.event_domain, v_done, v_window, NULL, NULL, 1)) THEN
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
                    t := fn_iu_route_worker_decide_page(t, p_worker_name, c.event_domain, v_done, v_window,
                                                        v_after_txid, v_after_id, v_page_limit, false);
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
                    t := fn_iu_route_worker_decide_page(t, p_worker_name, c.event_domain, v_done, v_window,
                                                        v_after_txid, v_after_id, v_page_limit, true);
                EXCEPTION WHEN OTHERS THEN
                    GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
                    v_page_err := v_state || ': ' || v_msg;
                END;
            END IF;
            IF v_page_err IS NOT NULL THEN
                v_fallback_err := v_page_err;
                t := fn_iu_route_worker_decide_each(t, p_worker_name, c.event_domain, v_done, v_window,
                                                    v_after_txid, v_after_id, v_page_limit);
            END IF;
            IF cardinality(t.deliver_ids) > 0 THEN
                t := fn_iu_route_worker_deliver_page(t, p_worker_name);
            END IF;
        END IF;

        v_page := t.claimed - v_before;
        IF v_page > 0 THEN
            v_after_txid := t.last_txid;
            v_after_id   := t.last_id;
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
            EXIT WHEN v_opened_here OR t.claimed >= p_batch_limit;
        ELSE
            EXIT; -- the batch is full; the window stays open at (v_after_txid, v_after_id)
        END IF;
    END LOOP;

    -- Who the position waits on: the in-progress transactions of the done and window
    -- snapshots stored after this run. An idle run stores nothing, so its position is
    -- still the cursor's done snapshot.
    v_holders := CASE WHEN t.claimed = 0 AND c.window_snapshot IS NULL
                      THEN fn_iu_route_worker_holders(c.done_snapshot, NULL)
                      ELSE fn_iu_route_worker_holders(v_done, v_window) END;
    v_summary := fn_iu_route_worker_summary(p_worker_name, c.event_domain, p_batch_limit, t,
                                            v_window IS NOT NULL, v_opened, v_closed, v_fallback_err,
                                            t.claimed = 0 AND c.window_snapshot IS NULL, v_holders);

    IF t.claimed = 0 AND c.window_snapshot IS NULL THEN
        -- Idle: nothing claimed and no window was open, so the position is unchanged (the
        -- empty window just opened and closed adds nothing: the rows not visible in it are
        -- exactly the rows not visible in done). Write nothing but a due heartbeat, so idle
        -- polling neither consumes transaction ids nor leaves dead row versions behind.
        IF EXISTS (SELECT 1 FROM fn_iu_route_worker_beat_due(p_worker_name, NULL)) THEN
            PERFORM fn_iu_route_worker_beat(p_worker_name, c.event_domain,
                jsonb_build_object('claimed', 0, 'attempts_written', 0, 'dead_lettered', 0, 'caught_up', true,
                                   'held_open_count', jsonb_array_length(v_holders)));
        END IF;
        RETURN v_summary;
    END IF;
    PERFORM fn_iu_route_worker_advance(p_worker_name, c.event_domain,
                                       CASE WHEN v_done_moved THEN v_done END,
                                       v_window, v_after_txid, v_after_id, t, v_summary);
    RETURN v_summary;
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_run(p_worker_name, p_batch_limit DEFAULT 100) -> jsonb summary
-- One transactional pass of one worker, in the caller's transaction:
--   1. the writable-schema guard, then the batch limit (22023; the worker name is checked
--      by the full pass, since the idle probe finds no worker under a name that breaks it)
--   2. the idle path: when fn_iu_route_worker_idle_probe says quiet (both gates open, no
--      window, a sane cursor, no beat due), fn_iu_route_worker_idle_rows finds nothing to
--      claim and no foreign row, and the worker's lock is free, the run returns the idle summary without another
--      statement: nothing claimed, nothing written (no transaction id, no WAL, no dead
--      row version), the same summary the full pass gives an idle run
--   3. otherwise the full pass, fn_iu_route_worker_pass: busy, gated, cursor sanity (IU002),
--      pages of decisions and audit rows, the cursor, the counters and the heartbeat
-- The idle path is most of what a caught-up worker polling every second does, so it is
-- kept to the guard, two probe statements and expressions; every case it does not answer
-- exactly (a window open, a due heartbeat, a foreign cursor or rows, a closed gate, a busy
-- lock, an unregistered worker) goes to the full pass, which decides it as before.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_run(p_worker_name text, p_batch_limit integer DEFAULT 100)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
-- The page statement's plan is the same for every call (two index range scans whose bounds
-- are parameters); re-planning it per call (the custom plans "auto" keeps choosing) costs
-- more than a batch of 100 takes to route. The setting holds for the helpers it calls.
SET plan_cache_mode = force_generic_plan
AS $$
DECLARE
    v_lock_id integer;
    v_domain  text;
    v_done    pg_snapshot;
    v_waits   boolean;
    v_quiet   boolean;
    v_holders jsonb;
BEGIN
    -- The guard as an expression (it returns true or raises): no statement of its own.
    IF NOT fn_iu_require_trusted_search_path('fn_iu_route_worker_run') THEN
        RETURN NULL;
    END IF;
    -- The worker name is checked by the full pass: a name that breaks the name rule was
    -- never registered, so the idle probe finds no worker for it and the full pass refuses
    -- it (22023). Only a bad batch limit must be refused here, after a bad name (the
    -- order in which a call with both learns about them).
    IF p_batch_limit IS NULL OR p_batch_limit < 1 OR p_batch_limit > 10000 THEN
        PERFORM fn_iu_route_worker_require_name('fn_iu_route_worker_run', p_worker_name);
        RAISE EXCEPTION 'fn_iu_route_worker_run: p_batch_limit must be between 1 and 10000, got %',
            coalesce(p_batch_limit::text, 'NULL') USING ERRCODE = '22023';
    END IF;

    SELECT p.lock_id, p.event_domain, p.done_snapshot, p.done_waits, p.quiet
      INTO v_lock_id, v_domain, v_done, v_waits, v_quiet
      FROM fn_iu_route_worker_idle_probe(p_worker_name) p;
    -- Then the outbox, with the position as values (pruned when the statement starts);
    -- the lock only when both are quiet.
    IF v_quiet
       AND NOT EXISTS (SELECT 1 FROM fn_iu_route_worker_idle_rows(v_domain, v_done, pg_current_snapshot()))
       AND fn_iu_route_worker_try_lock(v_lock_id) THEN
        -- The holders of the position it keeps, described only when one still runs.
        v_holders := CASE WHEN v_waits THEN fn_iu_route_worker_holders(v_done, NULL) ELSE '[]'::jsonb END;
        -- As the full pass reports an idle run: one empty window opened and closed.
        RETURN fn_iu_route_worker_summary(p_worker_name, v_domain, p_batch_limit,
                                          fn_iu_route_run_tally_zero(),
                                          false, 1, 1, NULL, true, v_holders);
    END IF;
    RETURN fn_iu_route_worker_pass(p_worker_name, p_batch_limit);
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_dead_letter_replay(p_dead_letter_id) -> jsonb
-- Re-attempts one dead-lettered event from its snapshot (nothing is read from event_outbox)
-- as a fresh iu_route_attempt with the next attempt_no, deciding with the route as it is
-- now (fn_iu_route_decide). A dry_run or sent outcome resolves the dead letter; a failure
-- moves failed_attempts and last_failed_at; skipped or disabled (no route, or route off)
-- leaves it open without counting a failure: the operator fixes the route and replays
-- again. Already resolved -> {"replayed": false, "reason": "already_resolved"}. The dead
-- letter row is locked, so two replays of one dead letter run one after the other.
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
    v_status   text;
    v_attempt  integer;
    v_res      jsonb;
    v_state    text;
    v_msg      text;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_iu_route_dead_letter_replay');
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

    -- The route as it is now (all NULL when none matches), for the event as it was.
    SELECT * INTO rt FROM iu_outbound_route r
     WHERE r.event_domain = dl.event_snapshot->>'event_domain'
       AND r.event_type   = dl.event_snapshot->>'event_type'
       AND r.event_stream = dl.event_snapshot->>'event_stream';

    SELECT coalesce(max(a.attempt_no), 0) + 1 INTO v_attempt
      FROM iu_route_attempt a WHERE a.idempotency_key = dl.idempotency_key;

    v_status := fn_iu_route_decide(rt.route_key, rt.enabled, rt.dry_run);
    IF v_status = 'deliver' THEN
        BEGIN
            v_res := fn_iu_route_deliver(dl.event_snapshot, rt.route_key, rt.route_kind, dl.idempotency_key);
            v_status := 'sent';
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
            v_status := 'failed';
        END;
    END IF;

    INSERT INTO iu_route_attempt (event_ref, worker_name, route_key, route_kind, status, idempotency_key,
                                  attempt_no, detail, error_code, error_message, event_txid)
    VALUES (dl.event_id, dl.worker_name, rt.route_key, rt.route_kind, v_status, dl.idempotency_key, v_attempt,
            jsonb_build_object('replay_of', dl.id) || coalesce(v_res, '{}'::jsonb), v_state, v_msg,
            coalesce((dl.event_snapshot->>'txid')::xid8, '0'));  -- a snapshot without txid: the oldest range

    PERFORM fn_iu_route_attempt_tally_add(dl.worker_name, v_status, 1, 1);

    IF v_status IN ('dry_run', 'sent') THEN
        UPDATE iu_route_dead_letter d
           SET resolved_at = now(), resolution = 'replayed_' || v_status, resolved_by = fn_queue_actor(NULL, 'fn_iu_route_dead_letter_replay')
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
-- fn_iu_route_worker_reset_cursor(p_worker_name) -> jsonb
-- Moves the cursor back to the start of the stream and re-anchors it in this cluster
-- (the fix for IU002). The next runs re-scan the domain; idempotency keys keep that
-- duplicate-free. Waits for a run in progress (runs are short; fn_iu_route_worker_lock),
-- so a reset never interleaves with one.
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
    v_sysid bigint;
    v_actor text;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_iu_route_worker_reset_cursor');
    v_sysid := (SELECT s.system_identifier FROM pg_control_system() s);
    v_actor := fn_queue_actor(NULL, 'fn_iu_route_worker_reset_cursor');
    PERFORM fn_iu_route_worker_require_name('fn_iu_route_worker_reset_cursor', p_worker_name);
    PERFORM fn_iu_route_worker_lock('fn_iu_route_worker_reset_cursor', p_worker_name, true);
    SELECT * INTO c FROM iu_route_worker_cursor cur WHERE cur.worker_name = p_worker_name;

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
-- v_iu_route_worker_status: THE worker-health computation. fn_iu_route_worker_health and
-- v_queue_health's cursor rows read it, so gates, backlog, dead letters and cursor sanity
-- are computed one way. The backlog of a cursor from another cluster is NULL (its
-- snapshots mean nothing here); cursor_ok is false and cursor_hint gives the fix.
-- ---------------------------------------------------------------------------------------
CREATE VIEW v_iu_route_worker_status AS
SELECT cur.worker_name,
       cur.event_domain,
       g.routes_enabled,
       g.worker_enabled,
       g.routes_enabled AND g.worker_enabled AS gates_open,
       cur.last_run_at,
       round(extract(epoch FROM now() - cur.last_run_at)::numeric, 3) AS last_run_age_seconds,
       -- The last sign of life: an idle run writes no cursor (last_run_at stays), only a
       -- rate-limited heartbeat beat, so the newer of the two (a beat counts once a run
       -- has beaten it: registration alone is not a run).
       CASE WHEN hb.ticks_total > 0 THEN greatest(cur.last_run_at, hb.last_beat_at) ELSE cur.last_run_at END
                                                            AS last_seen_at,
       cur.runs_total,
       cur.events_seen,
       cur.attempts_written,
       cur.dead_lettered,
       pend.pending AS backlog,
       pend.capped AS backlog_capped,
       pend.oldest_created_at AS oldest_pending_created_at,
       round(extract(epoch FROM now() - pend.oldest_created_at)::numeric, 3) AS oldest_pending_age_seconds,
       dl.open_count AS open_dead_letters,
       dl.oldest AS oldest_open_dead_letter_at,
       cur.window_snapshot IS NOT NULL AS window_open,
       k.problem IS NULL AND NOT k.foreign_rows AS cursor_ok,
       k.problem AS cursor_problem,
       k.foreign_rows AS foreign_txid_rows,
       CASE WHEN k.problem IS NOT NULL THEN
                format('cursor recorded in another cluster (IU002): SELECT fn_iu_route_worker_reset_cursor(%L);', cur.worker_name)
            WHEN k.foreign_rows THEN
                'event_outbox holds rows with transaction ids from another cluster (IU002): SELECT fn_iu_event_outbox_rebase_foreign_txids();'
       END AS cursor_hint,
       cur.last_created_at,
       cur.last_event_id,
       cur.done_snapshot,
       cur.window_snapshot,
       cur.window_txid,
       cur.window_event_id,
       cur.system_identifier,
       cur.last_run_summary
  FROM iu_route_worker_cursor cur
  LEFT JOIN queue_heartbeat hb ON hb.executor_id = cur.worker_name
 CROSS JOIN LATERAL (SELECT fn_iu_core_routes_enabled() IS TRUE AS routes_enabled,
                            fn_iu_route_worker_enabled() IS TRUE AS worker_enabled) g
 CROSS JOIN LATERAL (SELECT fn_iu_route_worker_cursor_problem(cur) AS problem,
                            fn_iu_route_worker_foreign_txids(cur.event_domain) AS foreign_rows) k
  LEFT JOIN LATERAL (SELECT pp.pending, pp.oldest_created_at, pp.capped
                       FROM fn_iu_route_worker_pending(cur.event_domain, cur.done_snapshot, cur.window_snapshot,
                                                       cur.window_txid, cur.window_event_id) pp
                      WHERE k.problem IS NULL) pend ON true
 CROSS JOIN LATERAL (SELECT count(*) AS open_count, min(d.last_failed_at) AS oldest
                       FROM iu_route_dead_letter d
                      WHERE d.worker_name = cur.worker_name AND d.resolved_at IS NULL) dl;

COMMENT ON VIEW v_iu_route_worker_status IS
    'Route workers: cursor, gates, counters, backlog (committed events not yet routed), open dead letters, cursor sanity (IU002).';

-- ---------------------------------------------------------------------------------------
-- fn_iu_route_worker_health(p_worker_name DEFAULT NULL) -> jsonb
-- v_iu_route_worker_status as JSON, plus what holds each worker's windows open (pid, age)
-- and its heartbeat. With a worker name, its document at the top level (and in
-- "workers"); without one, every worker. Unknown worker -> P0002.
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
    v_routes_on boolean;
    v_worker_on boolean;
    v_gates     jsonb;
    v_workers   jsonb;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_iu_route_worker_health');
    v_routes_on := fn_iu_core_routes_enabled() IS TRUE;
    v_worker_on := fn_iu_route_worker_enabled() IS TRUE;
    IF p_worker_name IS NOT NULL THEN
        PERFORM fn_iu_route_worker_require_name('fn_iu_route_worker_health', p_worker_name);
        IF NOT EXISTS (SELECT 1 FROM iu_route_worker_cursor cur WHERE cur.worker_name = p_worker_name) THEN
            PERFORM fn_iu_route_worker_not_registered('fn_iu_route_worker_health', p_worker_name);
        END IF;
    END IF;

    v_gates := jsonb_build_object('iu_core.routes_enabled', v_routes_on,
                                  'iu_core.route_worker_enabled', v_worker_on,
                                  'open', v_routes_on AND v_worker_on);

    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'worker', s.worker_name,
               'event_domain', s.event_domain,
               'gates', v_gates,
               'runs_total', s.runs_total,
               'last_run_at', s.last_run_at,
               'last_run_age_seconds', s.last_run_age_seconds,
               'events_seen', s.events_seen,
               'attempts_written', s.attempts_written,
               'dead_lettered', s.dead_lettered,
               'backlog', s.backlog,
               'backlog_capped', s.backlog_capped,
               'oldest_pending_created_at', s.oldest_pending_created_at,
               'oldest_pending_age_seconds', s.oldest_pending_age_seconds,
               'open_dead_letters', s.open_dead_letters,
               'oldest_open_dead_letter_at', s.oldest_open_dead_letter_at,
               'window_open', s.window_open,
               'held_open_count', jsonb_array_length(hold.holders),
               'held_open_by', hold.holders,
               'cursor_ok', s.cursor_ok,
               'foreign_txid_rows', s.foreign_txid_rows,
               'cursor_hint', s.cursor_hint,
               'heartbeat', (SELECT jsonb_build_object('last_beat_at', h.last_beat_at,
                                                       'age_seconds', round(extract(epoch FROM now() - h.last_beat_at)::numeric, 3),
                                                       'ticks_total', h.ticks_total,
                                                       'status', h.status,
                                                       'stale_threshold_seconds', h.stale_threshold_seconds,
                                                       'last_beat_payload', h.last_beat_payload)
                               FROM queue_heartbeat h WHERE h.executor_id = s.worker_name),
               'last_run_summary', s.last_run_summary) ORDER BY s.worker_name), '[]'::jsonb)
      INTO v_workers
      FROM v_iu_route_worker_status s
     CROSS JOIN LATERAL (
           -- a cursor from another cluster: its snapshots name no transaction of ours
           SELECT CASE WHEN s.cursor_problem IS NULL
                       THEN fn_iu_route_worker_holders(s.done_snapshot, s.window_snapshot)
                       ELSE '[]'::jsonb END AS holders) hold
     WHERE p_worker_name IS NULL OR s.worker_name = p_worker_name;

    IF p_worker_name IS NOT NULL THEN
        -- One worker: its document at the top level (and in "workers" for uniform readers).
        RETURN (v_workers->0) || jsonb_build_object('checked_at', now(), 'workers', v_workers);
    END IF;
    RETURN jsonb_build_object('checked_at', now(), 'gates', v_gates,
                              'worker_count', jsonb_array_length(v_workers), 'workers', v_workers);
END;
$$;
-- +goose StatementEnd

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

-- From the running counters (iu_route_attempt_tally), so its cost does not grow with the
-- audit log. events = first decisions (attempts that are not replays).
CREATE VIEW v_iu_route_attempt_summary AS
SELECT t.worker_name,
       t.status,
       t.attempts,
       t.attempts - t.replays AS events,
       t.replays,
       t.first_at,
       t.last_at
  FROM iu_route_attempt_tally t;

COMMENT ON VIEW v_iu_route_attempt_summary IS
    'Route worker audit rows by worker and status (attempts, first decisions, replays, first/last), from running counters.';

-- ---------------------------------------------------------------------------------------
-- Privileges, in one place: PUBLIC executes nothing; executors run the worker, operators
-- the rest. Internal helpers are executed by nobody but the owner (through the SECURITY
-- DEFINER entry points), and carry neither SECURITY DEFINER nor SET search_path: they run
-- inside an entry point that already pinned search_path and passed the writable-schema
-- guard, and a SET clause would cost a configuration save and restore on every call (and
-- keep SQL functions from being inlined). A function a role may execute directly keeps
-- both, and the guard. A view's function calls are checked against its reader, so the
-- functions v_iu_route_worker_status calls are granted to workflow_admin too.
-- ---------------------------------------------------------------------------------------
REVOKE ALL ON FUNCTION fn_iu_route_decide(text, boolean, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_idempotency_key(text, text, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_require_name(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_not_registered(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_cursor_check(iu_route_worker_cursor) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_cursor_ahead(iu_route_worker_cursor) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_cursor_problem(iu_route_worker_cursor) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_lock(text, text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_attempt_tally_add(text, text, integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_claim(text, pg_snapshot, pg_snapshot, xid8, uuid, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_page(text, pg_snapshot, pg_snapshot, xid8, uuid, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_pending(text, pg_snapshot, pg_snapshot, xid8, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_holders(pg_snapshot, pg_snapshot) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_snapshot() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_foreign_rows(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_foreign_txids(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_event_outbox_rebase_foreign_txids() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_deliver(jsonb, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_event(uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_fail(iu_route_run_tally, text, uuid, text, text, text, text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_decide_page(iu_route_run_tally, text, text, pg_snapshot, pg_snapshot, xid8, uuid, integer, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_decide_each(iu_route_run_tally, text, text, pg_snapshot, pg_snapshot, xid8, uuid, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_deliver_page(iu_route_run_tally, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_beat_due(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_beat(text, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_advance(text, text, pg_snapshot, pg_snapshot, xid8, uuid, iu_route_run_tally, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_register(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_run(text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_pass(text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_idle_probe(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_idle_rows(text, pg_snapshot, pg_snapshot) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_run_tally_zero() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_summary_counts(iu_route_run_tally, boolean, integer, integer, text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_summary(text, text, integer, iu_route_run_tally, boolean, integer, integer, text, boolean, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_lock_class() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_try_lock(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_dead_letter_replay(uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_reset_cursor(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_health(text) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION fn_iu_route_worker_run(text, integer) TO dot_executor, workflow_admin;
GRANT EXECUTE ON FUNCTION fn_iu_route_worker_register(text, text) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_iu_route_worker_reset_cursor(text) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_iu_event_outbox_rebase_foreign_txids() TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_iu_route_dead_letter_replay(uuid) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_iu_route_worker_health(text) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_iu_route_worker_pending(text, pg_snapshot, pg_snapshot, xid8, uuid) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_iu_route_worker_cursor_problem(iu_route_worker_cursor) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_iu_route_worker_foreign_txids(text) TO workflow_admin;

GRANT SELECT ON v_iu_route_worker_status, v_iu_route_dead_letter_open, v_iu_route_attempt_summary TO workflow_admin;

-- +goose Down
REVOKE SELECT ON v_iu_route_worker_status, v_iu_route_dead_letter_open, v_iu_route_attempt_summary FROM workflow_admin;
DROP FUNCTION fn_iu_route_worker_health(text);
DROP VIEW v_iu_route_attempt_summary;
DROP VIEW v_iu_route_dead_letter_open;
DROP VIEW v_iu_route_worker_status;
DROP FUNCTION fn_iu_route_worker_reset_cursor(text);
DROP FUNCTION fn_iu_route_dead_letter_replay(uuid);
DROP FUNCTION fn_iu_route_worker_run(text, integer);
DROP FUNCTION fn_iu_route_worker_pass(text, integer);
DROP FUNCTION fn_iu_route_worker_summary(text, text, integer, iu_route_run_tally, boolean, integer, integer, text, boolean, jsonb);
DROP FUNCTION fn_iu_route_worker_summary_counts(iu_route_run_tally, boolean, integer, integer, text, boolean);
DROP FUNCTION fn_iu_route_worker_idle_rows(text, pg_snapshot, pg_snapshot);
DROP FUNCTION fn_iu_route_worker_idle_probe(text);
DROP FUNCTION fn_iu_route_worker_register(text, text);
DROP FUNCTION fn_iu_route_worker_advance(text, text, pg_snapshot, pg_snapshot, xid8, uuid, iu_route_run_tally, jsonb);
DROP FUNCTION fn_iu_route_attempt_tally_add(text, text, integer, integer);
DROP FUNCTION fn_iu_route_worker_beat(text, text, jsonb);
DROP FUNCTION fn_iu_route_worker_beat_due(text, text);
DROP FUNCTION fn_iu_route_worker_deliver_page(iu_route_run_tally, text);
DROP FUNCTION fn_iu_route_worker_decide_each(iu_route_run_tally, text, text, pg_snapshot, pg_snapshot, xid8, uuid, integer);
DROP FUNCTION fn_iu_route_worker_decide_page(iu_route_run_tally, text, text, pg_snapshot, pg_snapshot, xid8, uuid, integer, boolean);
DROP FUNCTION fn_iu_route_worker_fail(iu_route_run_tally, text, uuid, text, text, text, text, text, text);
DROP FUNCTION fn_iu_route_run_tally_zero();
DROP TYPE iu_route_run_tally;
DROP FUNCTION fn_iu_route_event(uuid);
DROP FUNCTION fn_iu_route_deliver(jsonb, text, text, text);
DROP FUNCTION fn_iu_event_outbox_rebase_foreign_txids();
DROP FUNCTION fn_iu_route_worker_foreign_txids(text);
DROP FUNCTION fn_iu_route_worker_foreign_rows(text);
DROP FUNCTION fn_iu_route_worker_snapshot();
DROP FUNCTION fn_iu_route_worker_holders(pg_snapshot, pg_snapshot);
DROP FUNCTION fn_iu_route_worker_pending(text, pg_snapshot, pg_snapshot, xid8, uuid);
DROP FUNCTION fn_iu_route_worker_page(text, pg_snapshot, pg_snapshot, xid8, uuid, integer);
DROP FUNCTION fn_iu_route_worker_claim(text, pg_snapshot, pg_snapshot, xid8, uuid, integer);
DROP FUNCTION fn_iu_route_worker_cursor_problem(iu_route_worker_cursor);
DROP FUNCTION fn_iu_route_worker_cursor_check(iu_route_worker_cursor);
DROP FUNCTION fn_iu_route_worker_cursor_ahead(iu_route_worker_cursor);
DROP FUNCTION fn_iu_route_worker_lock(text, text, boolean);
DROP FUNCTION fn_iu_route_worker_try_lock(integer);
DROP FUNCTION fn_iu_route_worker_lock_class();
DROP FUNCTION fn_iu_route_worker_not_registered(text, text);
DROP FUNCTION fn_iu_route_worker_require_name(text, text);
DROP FUNCTION fn_iu_route_idempotency_key(text, text, uuid);
DROP FUNCTION fn_iu_route_decide(text, boolean, boolean);
