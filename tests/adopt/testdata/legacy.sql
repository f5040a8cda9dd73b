-- legacy.sql: the production database that the first-generation iu-core system built, as
-- the design documents in shared/seeds/ describe it. The adoption tests load it into an
-- EMPTY database: nothing of this package is installed there.
--
-- Run it with psql (it uses two psql meta-commands to read its size):
--
--     psql -X -v ON_ERROR_STOP=1 -v rows=93001 -f legacy.sql          "$DATABASE_URL"
--     PGOPTIONS='-c fixture.rows=1000000' psql -X -v ON_ERROR_STOP=1 -f legacy.sql "$DATABASE_URL"
--
--   rows         psql variable, or the setting fixture.rows: how many event_outbox rows
--                (default 93001, the seed's "93k+ rows"; at least 1000)
--   outbox_ddl   psql variable, optional: a file with another CREATE TABLE event_outbox
--                (the base variants, variants/base_*.sql)
--   fixture.now  optional setting: the moment the snapshot of production is taken
--                (default now(), truncated to the minute). Every age below is relative to it,
--                so heartbeats and the cursor are as stale as the seeds say on any day.
--
-- What the seeds give, and so what this file builds (each object quotes the seed lines it
-- follows; "seed:" names the file in shared/seeds/, "spec:" a section of shared/spec/SPEC.md):
--   event_outbox              the shared append-only log (route-worker seed, DP4 seed)
--   iu_route_attempt          the audit sink, "migration 002" shape, reused unchanged by the worker
--   iu_outbound_route         routes by (domain, type, stream)
--   event_type_registry       the event vocabulary (DP4 §3.5)
--   dot_config                gates and hc_executor_last_run (DP4 §2, Q6)
--   iu_route_worker_cursor    seed migration 008: keyset (last_created_at, last_event_id)
--   iu_route_dead_letter      seed migration 008: the worker's retry queue
--   009 functions + 3 views   fn_iu_route_worker_enabled, fn_iu_route_deliver,
--                             fn_iu_route_worker_run, fn_iu_route_dead_letter_replay,
--                             fn_iu_route_worker_health ("5 functions + 3 views")
--   queue_heartbeat           the table the cut seed reads (executor_name, last_tick_at, ...)
--   fn_iu_emit_event, fn_queue_heartbeat_tick, fn_cut_heartbeat_ping (mig 053)
--   roles                     workflow_admin, dot_executor (NOLOGIN), cutter_agent (LOGIN producer)
--   v_event_outbox_daily      a reporting view on event_outbox
--   goose_db_version          the first-generation project's own goose history, 0..53
-- What the seeds only sketch (DP4 is "DESIGN-ONLY ... NON-EXECUTABLE DESIGN SKETCH — DO NOT
-- APPLY") is NOT built: v_queue_health, fn_queue_stale_check, the NOTIFY bridge, job_queue.
-- Where a seed is silent and a choice had to be made, the comment says "(seed silent)".
--
-- Everything is created in schema public by the loading (super)user, as a first-generation
-- install would have been. Roles are cluster-wide and created only when missing (several
-- databases of one test cluster load this file at once).

\set ON_ERROR_STOP 1
SET client_min_messages = warning;
\if :{?rows}
SET fixture.rows = :'rows';
\endif

BEGIN;

-- ---------------------------------------------------------------------------------------
-- Parameters of this load (session-local: the temp tables vanish with the session).
-- ---------------------------------------------------------------------------------------
CREATE TEMP TABLE fixture_params AS
SELECT n                                            AS rows_total,
       n - 5                                        AS rows_bulk,    -- + 2 cursor-group rows + 3 late-commit rows
       t                                            AS t_now,
       t - interval '42 days'                       AS t_first,      -- "created_at spread over weeks"
       (interval '42 days' - interval '2 minutes') / (n - 5) AS t_step,
       -- seed DP4 §2: "iu_route_worker_cursor.last_run_at = 2026-05-22 11:31 — 4-day silent gap
       -- (95 hours)"; seed cut: "iu_outbound_default ... warn ~101h (frozen 2026-05-22)".
       -- Both name the same frozen moment, read six hours apart; the fixture is taken at the
       -- later reading: the worker's last run and its marker are 101 hours old.
       t - interval '101 hours'                     AS t_last_run
  FROM (SELECT coalesce(nullif(current_setting('fixture.rows', true), '')::integer, 93001) AS n,
               date_trunc('minute', coalesce(nullif(current_setting('fixture.now', true), '')::timestamptz, now())) AS t) s;

DO $$
BEGIN
    IF (SELECT rows_total FROM fixture_params) < 1000 THEN
        RAISE EXCEPTION 'legacy.sql: rows = % is too small, at least 1000', (SELECT rows_total FROM fixture_params);
    END IF;
END;
$$;

-- ---------------------------------------------------------------------------------------
-- Roles. seed DP4 §6: "Registration requires workflow_admin role; write requires
-- dot_executor." seed cut: "Granted to workflow_admin only." The producer login is the
-- fixture's choice of name (seed silent): a service that INSERTs its events directly.
-- ---------------------------------------------------------------------------------------
DO $$
DECLARE
    v_role text;
BEGIN
    FOREACH v_role IN ARRAY ARRAY['workflow_admin', 'dot_executor', 'cutter_agent'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = v_role) THEN
            BEGIN
                IF v_role = 'cutter_agent' THEN
                    EXECUTE format('CREATE ROLE %I LOGIN PASSWORD %L', v_role, 'cutter_agent');
                ELSE
                    EXECUTE format('CREATE ROLE %I NOLOGIN', v_role);
                END IF;
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL; -- another database of this cluster created it at the same moment
            END;
        END IF;
    END LOOP;
END;
$$;

-- ---------------------------------------------------------------------------------------
-- dot_config. seed route worker: "fn_iu_route_worker_enabled() (dedicated worker
-- kill-switch, dot_config 'iu_core.route_worker_enabled')"; seed DP4 §2: "hc_executor_last_run
-- (dot_config) is being updated each tick"; seed cut: "dot_config.queue.heartbeat.enabled =
-- 'true'". Columns beyond key/value (seed silent): one audit timestamp.
-- ---------------------------------------------------------------------------------------
CREATE TABLE dot_config (
    key        text        PRIMARY KEY,
    value      text        NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- ---------------------------------------------------------------------------------------
-- event_type_registry. seed DP4 §3.5: "New event_type system/queue_worker_silent must be
-- added to event_type_registry — that ratification is itself a Council step (vocab change),
-- not in scope of this design pack." So the registry exists, keyed by (domain, type), and
-- does NOT hold system/queue_worker_silent (nor queue_worker_recovered).
-- ---------------------------------------------------------------------------------------
CREATE TABLE event_type_registry (
    event_domain text        NOT NULL,
    event_type   text        NOT NULL,
    description  text,
    ratified_by  text,
    ratified_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (event_domain, event_type)
);

-- ---------------------------------------------------------------------------------------
-- event_outbox. seed route worker: "event_outbox is a shared append-only log (93k+ rows,
-- mostly system/alert). It has no delivery-state columns — no delivered_at, no
-- processed_at." Columns: the ones seed DP4 reads and writes (§3.2 NEW.id, NEW.event_domain,
-- NEW.event_type, NEW.delivery_lane, NEW.occurred_at; §3.5 event_domain, event_type,
-- event_stream, delivery_lane, event_severity, event_subject_table, event_subject_ref,
-- safe_payload) and created_at, the worker's keyset column ("(created_at,id) > cursor").
-- Types and defaults as spec §3 states them (id uuid default gen_random_uuid(), lane
-- immediate|standard|batch default standard, severity debug|info|warning|critical default
-- info, payload default {}, created_at default now()).
-- seed DP4 §6: "NOTIFY payloads are signal-only — CHECK on last_beat_payload mirrors
-- event_outbox.safe_payload": the outbox carries the top-level denylist CHECK (spec §2: "the
-- seeds check the top level only").
-- No txid column: the first generation keyed its consumer on (created_at, id).
-- The PRIMARY KEY and the indexes are built after the bulk load below (same end state).
-- A base variant (variants/base_*.sql, psql -v outbox_ddl=FILE) replaces this one statement
-- with its own CREATE TABLE event_outbox (another column order, a dropped column...).
-- ---------------------------------------------------------------------------------------
\if :{?outbox_ddl}
\i :outbox_ddl
\else
CREATE TABLE event_outbox (
    id                  uuid        NOT NULL DEFAULT gen_random_uuid(),
    event_domain        text        NOT NULL,
    event_type          text        NOT NULL,
    event_stream        text        NOT NULL,
    delivery_lane       text        NOT NULL DEFAULT 'standard'
                        CHECK (delivery_lane IN ('immediate', 'standard', 'batch')),
    event_severity      text        NOT NULL DEFAULT 'info'
                        CHECK (event_severity IN ('debug', 'info', 'warning', 'critical')),
    event_subject_table text,
    event_subject_ref   text,
    safe_payload        jsonb       NOT NULL DEFAULT '{}'::jsonb,
    occurred_at         timestamptz NOT NULL DEFAULT now(),
    created_at          timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT event_outbox_safe_payload_hygiene CHECK (
        NOT safe_payload ?| ARRAY['body','content','raw','vector','embedding','secret','token','password','ssn','personal_data'])
);
\endif

COMMENT ON TABLE event_outbox IS 'Shared append-only event log (iu-core). No delivery state: consumers track their own position.';

-- Append-only. The seeds state the rule ("a shared append-only log") but show no trigger;
-- the usual first-generation guard: a row trigger that rejects UPDATE and DELETE (no
-- TRUNCATE guard, seed silent).
CREATE FUNCTION fn_event_outbox_append_only()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'event_outbox is append-only (% rejected)', TG_OP;
END;
$$;

CREATE TRIGGER trg_event_outbox_append_only
    BEFORE UPDATE OR DELETE ON event_outbox
    FOR EACH ROW EXECUTE FUNCTION fn_event_outbox_append_only();

-- ---------------------------------------------------------------------------------------
-- iu_route_attempt, "migration 002". seed route worker: "iu_route_attempt (migration 002) is
-- reused unchanged as the per-event audit sink — it already has event_ref uuid, route_kind,
-- status, idempotency_key, UNIQUE (idempotency_key, attempt_no)." It predates the worker, so
-- it has no worker_name and no route_key column: the worker puts both into the idempotency
-- key ("iu_wrk:{worker}:{route}:{event_id}") and into detail. id, detail, error and
-- created_at: seed silent (a bigserial id, as 002-era tables had). Statuses: the five the
-- worker writes ("dry_run ... / disabled / skipped (no route) / failed", spec adds sent).
-- No immutability trigger (seed silent; only the dead letters are "never DELETEd").
-- ---------------------------------------------------------------------------------------
CREATE TABLE iu_route_attempt (
    id              bigserial   PRIMARY KEY,
    event_ref       uuid        NOT NULL,
    route_kind      text,
    status          text        NOT NULL
                    CHECK (status IN ('dry_run', 'disabled', 'skipped', 'failed', 'sent')),
    idempotency_key text        NOT NULL,
    attempt_no      integer     NOT NULL DEFAULT 1,
    detail          jsonb       NOT NULL DEFAULT '{}'::jsonb,
    error           text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT iu_route_attempt_idempotency_key_attempt_no_key UNIQUE (idempotency_key, attempt_no)
);

CREATE INDEX iu_route_attempt_event_ref_idx ON iu_route_attempt (event_ref);

-- ---------------------------------------------------------------------------------------
-- iu_outbound_route. seed route worker: "Route — resolve iu_outbound_route by
-- (domain,type,stream)"; "dry_run (route enabled+dry_run ...) / disabled / skipped (no
-- route)"; the idempotency key names the route ("{route}"). spec §3: route_key text unique,
-- route_kind, enabled default false, dry_run default true.
-- ---------------------------------------------------------------------------------------
CREATE TABLE iu_outbound_route (
    id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    event_domain text        NOT NULL,
    event_type   text        NOT NULL,
    event_stream text        NOT NULL,
    route_key    text        NOT NULL UNIQUE,
    route_kind   text        NOT NULL DEFAULT 'outbound',
    enabled      boolean     NOT NULL DEFAULT false,
    dry_run      boolean     NOT NULL DEFAULT true,
    created_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (event_domain, event_type, event_stream)
);

-- ---------------------------------------------------------------------------------------
-- Seed migration 008 — route worker substrate.
-- seed: "iu_route_worker_cursor— one row per named worker. Keyset high-water mark
-- (last_created_at, last_event_id) over the iu-domain event_outbox stream. event_domain
-- scope, run counters, last_run_summary."  seed DP4 §3.3 reads c.worker_name,
-- c.event_domain, c.last_run_at, c.events_seen, c.attempts_written, c.dead_lettered.
-- ---------------------------------------------------------------------------------------
CREATE TABLE iu_route_worker_cursor (
    worker_name      text        PRIMARY KEY,
    event_domain     text        NOT NULL DEFAULT 'iu',
    last_created_at  timestamptz,
    last_event_id    uuid,
    events_seen      bigint      NOT NULL DEFAULT 0,
    attempts_written bigint      NOT NULL DEFAULT 0,
    dead_lettered    bigint      NOT NULL DEFAULT 0,
    runs_total       bigint      NOT NULL DEFAULT 0,
    last_run_at      timestamptz,
    last_run_summary jsonb       NOT NULL DEFAULT '{}'::jsonb,
    created_at       timestamptz NOT NULL DEFAULT now()
);

-- seed: "iu_route_dead_letter— an iu event the worker could not route/deliver. Full
-- event_snapshot so it is replayable without re-reading event_outbox. idempotency_key
-- UNIQUE; resolved via resolved_at + resolution, never DELETEd. The dead-letter table is the
-- worker's retry queue." seed DP4 §3.3 reads ir.event_domain, ir.last_failed_at,
-- ir.resolved_at. The other columns as spec §4.1 lists them.
CREATE TABLE iu_route_dead_letter (
    id              uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    worker_name     text        NOT NULL,
    event_id        uuid        NOT NULL,
    event_domain    text        NOT NULL,
    event_type      text        NOT NULL,
    event_stream    text        NOT NULL,
    route_key       text,
    idempotency_key text        NOT NULL UNIQUE,
    event_snapshot  jsonb       NOT NULL,
    error_code      text,
    error_message   text,
    failed_attempts integer     NOT NULL DEFAULT 1,
    first_failed_at timestamptz NOT NULL DEFAULT now(),
    last_failed_at  timestamptz NOT NULL DEFAULT now(),
    resolved_at     timestamptz,
    resolution      text,
    resolved_by     text
);

CREATE FUNCTION fn_iu_route_dead_letter_no_delete()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'iu_route_dead_letter rows are resolved, never deleted';
END;
$$;

CREATE TRIGGER trg_iu_route_dead_letter_no_delete
    BEFORE DELETE ON iu_route_dead_letter
    FOR EACH ROW EXECUTE FUNCTION fn_iu_route_dead_letter_no_delete();

-- ---------------------------------------------------------------------------------------
-- queue_heartbeat, as it exists after "mig 052" (seed cut: "After mig 052 the only heartbeat
-- tick for the cut pipeline was a single dieu45_phase3_pilot row"). NOT the DP4 sketch
-- (executor_id, last_beat_at, ...: "NON-EXECUTABLE DESIGN SKETCH — DO NOT APPLY"): the
-- table the cut seed runs against, whose columns it names: executor_name ("executor_name |
-- kind | status | age"), last_tick_at ("the legacy row's last_tick_at never advances"),
-- ticks_total ("tick OK, ticks_total=1"), metadata ("auditing queue_heartbeat.metadata"),
-- status ("p_status ∈ {ok,warn,error} ... matches queue_heartbeat CHECK"), executor_kind
-- (the 7-vocab). "These keys never collide with the §11.5 metadata-denylist (no
-- body/content/raw/vector/embedding/secret/token/password/ssn/personal_data)": a CHECK.
-- No cadence or threshold columns (seed silent: the stale-check was never built).
-- ---------------------------------------------------------------------------------------
CREATE TABLE queue_heartbeat (
    executor_name text        PRIMARY KEY,
    executor_kind text        NOT NULL
        CHECK (executor_kind IN ('DOT','Agent','Hermes','Codex','PG_worker','external_worker','future_Kestra_adapter')),
    status        text        NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'warn', 'error')),
    last_tick_at  timestamptz NOT NULL DEFAULT now(),
    ticks_total   bigint      NOT NULL DEFAULT 0,
    metadata      jsonb       NOT NULL DEFAULT '{}'::jsonb
        CHECK (NOT metadata ?| ARRAY['body','content','raw','vector','embedding','secret','token','password','ssn','personal_data']),
    created_at    timestamptz NOT NULL DEFAULT now()
);

-- ---------------------------------------------------------------------------------------
-- goose_db_version: the first-generation project's own migration history, as goose v3
-- wrote it before v3.16 (serial id; newer goose creates an identity column instead):
-- version 0 at creation, then one row per applied migration, 1..53 (seed cut: "After mig
-- 052", "053_proof", "{mig:'053',phase:'E'}"; seed route worker: migrations 002, 008, 009).
-- ---------------------------------------------------------------------------------------
CREATE TABLE goose_db_version (
    id         serial    NOT NULL,
    version_id bigint    NOT NULL,
    is_applied boolean   NOT NULL,
    tstamp     timestamp NULL DEFAULT now(),
    PRIMARY KEY (id)
);

-- =======================================================================================
-- Functions
-- =======================================================================================

-- The master gate and the worker gate. seed: "Dual fail-closed gate —
-- fn_iu_core_routes_enabled() (master) AND fn_iu_route_worker_enabled() (dedicated worker
-- kill-switch, dot_config 'iu_core.route_worker_enabled'). Either closed → clean no-op."
CREATE FUNCTION fn_iu_core_routes_enabled()
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT coalesce((SELECT value = 'true' FROM dot_config WHERE key = 'iu_core.routes_enabled'), false)
$$;

CREATE FUNCTION fn_iu_route_worker_enabled()
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT coalesce((SELECT value = 'true' FROM dot_config WHERE key = 'iu_core.route_worker_enabled'), false)
$$;

-- fn_iu_emit_event: the sanctioned writer. spec §13: "positional fn_iu_emit_event(domain,
-- type, stream, lane, severity, subject_table, subject_ref, payload)"; seed DP4 §3.5 emits
-- "via fn_iu_emit_event with: event_domain='system' event_type='queue_worker_silent'
-- event_stream='alert' delivery_lane='immediate' event_severity = computed
-- event_subject_table='queue_heartbeat' event_subject_ref=executor_id safe_payload = {...}"
-- and requires the type in event_type_registry. First-generation checks: the registry and
-- the top-level payload denylist (the table's CHECK repeats it); errors are plain RAISE
-- (SQLSTATE P0001). EXECUTE was never revoked from PUBLIC (seed silent).
CREATE FUNCTION fn_iu_emit_event(
    p_event_domain        text,
    p_event_type          text,
    p_event_stream        text,
    p_delivery_lane       text  DEFAULT 'standard',
    p_event_severity      text  DEFAULT 'info',
    p_event_subject_table text  DEFAULT NULL,
    p_event_subject_ref   text  DEFAULT NULL,
    p_safe_payload        jsonb DEFAULT '{}'::jsonb
)
RETURNS uuid
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_id uuid;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM event_type_registry r
                    WHERE r.event_domain = p_event_domain AND r.event_type = p_event_type) THEN
        RAISE EXCEPTION 'fn_iu_emit_event: event type %/% is not registered in event_type_registry',
            p_event_domain, p_event_type;
    END IF;
    IF p_safe_payload ?| ARRAY['body','content','raw','vector','embedding','secret','token','password','ssn','personal_data'] THEN
        RAISE EXCEPTION 'fn_iu_emit_event: safe_payload carries a denylisted key';
    END IF;
    INSERT INTO event_outbox (event_domain, event_type, event_stream, delivery_lane, event_severity,
                              event_subject_table, event_subject_ref, safe_payload)
    VALUES (p_event_domain, p_event_type, p_event_stream, p_delivery_lane, p_event_severity,
            p_event_subject_table, p_event_subject_ref, coalesce(p_safe_payload, '{}'::jsonb))
    RETURNING id INTO v_id;
    RETURN v_id;
END;
$$;

-- ---------------------------------------------------------------------------------------
-- Seed migration 009 — "5 functions + 3 views". The fifth function besides the four named
-- here is fn_iu_route_worker_enabled (above).
-- ---------------------------------------------------------------------------------------

-- seed: "fn_iu_route_deliver is the dry_run=false delivery point. It is intentionally
-- unbuilt — it RAISEs feature_not_supported. The worker catches it and dead-letters the
-- event." Its arguments are the event and route rows (seed silent on the signature: the
-- first generation passed whole rows, so the function depends on both tables' row types).
CREATE FUNCTION fn_iu_route_deliver(p_event event_outbox, p_route iu_outbound_route)
RETURNS jsonb
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'fn_iu_route_deliver: delivery not built (route %, event %)', p_route.route_key, p_event.id
        USING ERRCODE = 'feature_not_supported';
END;
$$;

-- seed: "fn_iu_route_worker_run(p_worker_name, p_batch_limit) — one transactional pass:
-- - Dual fail-closed gate — ... Either closed → clean no-op.
-- - Claim — keyset batch WHERE event_domain='iu' AND (created_at,id) > cursor ORDER BY
--   created_at,id LIMIT n FOR UPDATE OF eo SKIP LOCKED. SKIP LOCKED gives safe multi-worker
--   concurrency.
-- - Route — resolve iu_outbound_route by (domain,type,stream).
-- - Decide + audit — per event, write exactly one iu_route_attempt: dry_run (route
--   enabled+dry_run — logs a decision, delivers nothing) / disabled / skipped (no route) /
--   failed.
-- - Dead-letter — a per-event EXCEPTION block: one bad event cannot abort the batch; the
--   failure is recorded as a failed attempt and snapshotted into iu_route_dead_letter.
-- - Advance cursor — atomically with the attempt writes (same txn)."
-- "Deterministic key iu_wrk:{worker}:{route}:{event_id}. ... ON CONFLICT (idempotency_key,
-- attempt_no) DO NOTHING writes no duplicate attempt."
-- "Known limitation: The keyset cursor advances monotonically. A row committed late with an
-- earlier created_at (a long-running unit_version txn) could be skipped." Transcribed as is:
-- that gap, and the rows SKIP LOCKED passes over, are part of the legacy behaviour.
-- The domain scope is the cursor's event_domain ("event_domain scope"). "{route}" is the
-- route_key, 'none' when no route matched (seed silent; spec §4.2). The worker does not beat
-- queue_heartbeat (seed cut: the iu_outbound_default marker stays stale; "Phase 3C ... for
-- fn_iu_route_worker_run wrapper remains the proposed closure path").
CREATE FUNCTION fn_iu_route_worker_run(p_worker_name text, p_batch_limit integer DEFAULT 100)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_cur       iu_route_worker_cursor%ROWTYPE;
    v_route     iu_outbound_route%ROWTYPE;
    eo          event_outbox%ROWTYPE;
    v_found     boolean;
    v_key       text;
    v_status    text;
    v_n         integer;
    v_state     text;
    v_msg       text;
    v_claimed   integer := 0;
    v_written   integer := 0;
    v_dead      integer := 0;
    v_counts    jsonb := '{"dry_run":0,"disabled":0,"skipped":0,"failed":0,"sent":0}'::jsonb;
    v_last_at   timestamptz;
    v_last_id   uuid;
    v_summary   jsonb;
BEGIN
    IF NOT (fn_iu_core_routes_enabled() AND fn_iu_route_worker_enabled()) THEN
        RETURN jsonb_build_object('worker', p_worker_name, 'gated', true, 'claimed', 0,
                                  'routes_enabled', fn_iu_core_routes_enabled(),
                                  'worker_enabled', fn_iu_route_worker_enabled());
    END IF;
    SELECT * INTO v_cur FROM iu_route_worker_cursor WHERE worker_name = p_worker_name FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fn_iu_route_worker_run: unknown worker %', p_worker_name;
    END IF;
    v_last_at := v_cur.last_created_at;
    v_last_id := v_cur.last_event_id;

    FOR eo IN
        SELECT e.* FROM event_outbox e
         WHERE e.event_domain = v_cur.event_domain
           AND (e.created_at, e.id) > (coalesce(v_cur.last_created_at, '-infinity'::timestamptz),
                                       coalesce(v_cur.last_event_id, '00000000-0000-0000-0000-000000000000'::uuid))
         ORDER BY e.created_at, e.id
         LIMIT p_batch_limit
         FOR UPDATE OF e SKIP LOCKED
    LOOP
        v_claimed := v_claimed + 1;
        SELECT * INTO v_route FROM iu_outbound_route r
         WHERE r.event_domain = eo.event_domain AND r.event_type = eo.event_type AND r.event_stream = eo.event_stream;
        v_found := FOUND;
        IF NOT v_found THEN
            v_route := NULL;
        END IF;
        v_key := 'iu_wrk:' || p_worker_name || ':' || coalesce(v_route.route_key, 'none') || ':' || eo.id::text;
        BEGIN
            IF NOT v_found THEN
                v_status := 'skipped';
            ELSIF NOT v_route.enabled THEN
                v_status := 'disabled';
            ELSIF v_route.dry_run THEN
                v_status := 'dry_run';
            ELSE
                PERFORM fn_iu_route_deliver(eo, v_route);
                v_status := 'sent';
            END IF;
            INSERT INTO iu_route_attempt (event_ref, route_kind, status, idempotency_key, attempt_no, detail)
            VALUES (eo.id, v_route.route_kind, v_status, v_key, 1,
                    jsonb_build_object('worker', p_worker_name, 'route_key', v_route.route_key,
                                       'event_type', eo.event_type, 'event_stream', eo.event_stream))
            ON CONFLICT (idempotency_key, attempt_no) DO NOTHING;
            GET DIAGNOSTICS v_n = ROW_COUNT;
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
            v_status := 'failed';
            INSERT INTO iu_route_attempt (event_ref, route_kind, status, idempotency_key, attempt_no, detail, error)
            VALUES (eo.id, v_route.route_kind, 'failed', v_key, 1,
                    jsonb_build_object('worker', p_worker_name, 'route_key', v_route.route_key,
                                       'event_type', eo.event_type, 'event_stream', eo.event_stream),
                    v_state || ': ' || v_msg)
            ON CONFLICT (idempotency_key, attempt_no) DO NOTHING;
            GET DIAGNOSTICS v_n = ROW_COUNT;
            INSERT INTO iu_route_dead_letter (worker_name, event_id, event_domain, event_type, event_stream,
                                              route_key, idempotency_key, event_snapshot, error_code, error_message)
            VALUES (p_worker_name, eo.id, eo.event_domain, eo.event_type, eo.event_stream,
                    v_route.route_key, v_key, to_jsonb(eo), v_state, v_msg)
            ON CONFLICT (idempotency_key) DO UPDATE
               SET failed_attempts = iu_route_dead_letter.failed_attempts + 1,
                   last_failed_at  = now(),
                   error_code      = EXCLUDED.error_code,
                   error_message   = EXCLUDED.error_message;
            v_dead := v_dead + 1;
        END;
        v_written := v_written + v_n;
        v_counts := jsonb_set(v_counts, ARRAY[v_status], to_jsonb((v_counts ->> v_status)::integer + 1));
        v_last_at := eo.created_at;
        v_last_id := eo.id;
    END LOOP;

    v_summary := jsonb_build_object('worker', p_worker_name, 'gated', false, 'claimed', v_claimed,
                                    'attempts_written', v_written, 'dead_lettered', v_dead,
                                    'cursor', jsonb_build_object('last_created_at', v_last_at, 'last_event_id', v_last_id),
                                    'run_at', now()) || v_counts;
    UPDATE iu_route_worker_cursor
       SET last_created_at  = v_last_at,
           last_event_id    = v_last_id,
           events_seen      = events_seen + v_claimed,
           attempts_written = attempts_written + v_written,
           dead_lettered    = dead_lettered + v_dead,
           runs_total       = runs_total + 1,
           last_run_at      = now(),
           last_run_summary = v_summary
     WHERE worker_name = p_worker_name;
    RETURN v_summary;
END;
$$;

-- seed: "fn_iu_route_dead_letter_replay(id) re-attempts one dead-lettered event as a fresh
-- iu_route_attempt (attempt_no incremented); resolves the row on a dry_run/sent outcome."
CREATE FUNCTION fn_iu_route_dead_letter_replay(p_dead_letter_id uuid)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    d         iu_route_dead_letter%ROWTYPE;
    v_route   iu_outbound_route%ROWTYPE;
    v_found   boolean;
    v_attempt integer;
    v_status  text;
    v_state   text;
    v_msg     text;
BEGIN
    SELECT * INTO d FROM iu_route_dead_letter WHERE id = p_dead_letter_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fn_iu_route_dead_letter_replay: dead letter % not found', p_dead_letter_id;
    END IF;
    IF d.resolved_at IS NOT NULL THEN
        RETURN jsonb_build_object('replayed', false, 'reason', 'already_resolved', 'dead_letter_id', d.id);
    END IF;
    SELECT * INTO v_route FROM iu_outbound_route r
     WHERE r.event_domain = d.event_domain AND r.event_type = d.event_type AND r.event_stream = d.event_stream;
    v_found := FOUND;
    SELECT coalesce(max(a.attempt_no), 0) + 1 INTO v_attempt
      FROM iu_route_attempt a WHERE a.idempotency_key = d.idempotency_key;
    BEGIN
        IF NOT v_found THEN
            v_status := 'skipped';
        ELSIF NOT v_route.enabled THEN
            v_status := 'disabled';
        ELSIF v_route.dry_run THEN
            v_status := 'dry_run';
        ELSE
            PERFORM fn_iu_route_deliver(jsonb_populate_record(NULL::event_outbox, d.event_snapshot), v_route);
            v_status := 'sent';
        END IF;
    EXCEPTION WHEN OTHERS THEN
        GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
        v_status := 'failed';
    END;
    INSERT INTO iu_route_attempt (event_ref, route_kind, status, idempotency_key, attempt_no, detail, error)
    VALUES (d.event_id, v_route.route_kind, v_status, d.idempotency_key, v_attempt,
            jsonb_build_object('worker', d.worker_name, 'route_key', v_route.route_key, 'replay_of', d.id),
            CASE WHEN v_status = 'failed' THEN v_state || ': ' || v_msg END);
    IF v_status IN ('dry_run', 'sent') THEN
        UPDATE iu_route_dead_letter
           SET resolved_at = now(), resolution = 'replayed_' || v_status, resolved_by = current_user
         WHERE id = d.id;
    ELSE
        UPDATE iu_route_dead_letter
           SET failed_attempts = failed_attempts + 1, last_failed_at = now(),
               error_code = coalesce(v_state, error_code), error_message = coalesce(v_msg, error_message)
         WHERE id = d.id;
    END IF;
    RETURN jsonb_build_object('replayed', true, 'dead_letter_id', d.id, 'attempt_no', v_attempt,
                              'status', v_status, 'resolved', v_status IN ('dry_run', 'sent'));
END;
$$;


-- ---------------------------------------------------------------------------------------
-- Heartbeat (mig 052) and the cut ping (mig 053).
-- seed cut: "a thin SECURITY DEFINER function over the primitive fn_queue_heartbeat_tick. The
-- primitive remains permissive (it's a generic UPSERT); the wrapper adds the policy."
-- The primitive: (name, kind, status, metadata) as the wrapper invokes it; it ticks ANY row,
-- iu_outbound_default included (only the wrapper protects it). Returns the row as jsonb
-- ("tick OK, ticks_total=1").
-- ---------------------------------------------------------------------------------------
CREATE FUNCTION fn_queue_heartbeat_tick(
    p_executor_name text,
    p_executor_kind text,
    p_status        text  DEFAULT 'ok',
    p_metadata      jsonb DEFAULT '{}'::jsonb
)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    h queue_heartbeat%ROWTYPE;
BEGIN
    INSERT INTO queue_heartbeat AS q (executor_name, executor_kind, status, last_tick_at, ticks_total, metadata)
    VALUES (p_executor_name, p_executor_kind, coalesce(p_status, 'ok'), now(), 1, coalesce(p_metadata, '{}'::jsonb))
    ON CONFLICT (executor_name) DO UPDATE
       SET executor_kind = EXCLUDED.executor_kind,
           status        = EXCLUDED.status,
           last_tick_at  = EXCLUDED.last_tick_at,
           ticks_total   = q.ticks_total + 1,
           metadata      = EXCLUDED.metadata
    RETURNING q.* INTO h;
    RETURN jsonb_build_object('ok', true, 'executor_name', h.executor_name, 'executor_kind', h.executor_kind,
                              'status', h.status, 'last_tick_at', h.last_tick_at, 'ticks_total', h.ticks_total);
END;
$$;

-- seed cut, "Surface": public.fn_cut_heartbeat_ping(p_executor_name text, p_executor_kind
-- text DEFAULT 'external_worker', p_status text DEFAULT 'ok', p_metadata jsonb DEFAULT
-- '{}'::jsonb) RETURNS jsonb SECURITY DEFINER SET search_path = public, pg_temp; "Granted to
-- workflow_admin only." "Policy (top to bottom)":
--   p_executor_name non-empty             RAISE 'fn_cut_heartbeat_ping: p_executor_name required'
--   p_executor_name = 'iu_outbound_default'  JSON {refused:true, reason:'protected_legacy_silent_passive'} (NOT RAISE)
--   p_executor_kind ∈ 7-vocab             RAISE
--   p_status ∈ {ok,warn,error}            RAISE
--   dot_config.queue.heartbeat.enabled = 'true'   JSON {skipped:true}
--   else invoke fn_queue_heartbeat_tick   metadata augmented with ping_origin, ping_function, ping_actor, ping_at
-- "Audit pin": ping_origin 'cut_pipeline_caller', ping_function 'fn_cut_heartbeat_ping',
-- ping_actor "<current_setting('app.actor', true) or 'cut_pipeline_operator_external'>",
-- ping_at "<now()>".
CREATE FUNCTION fn_cut_heartbeat_ping(
    p_executor_name text,
    p_executor_kind text  DEFAULT 'external_worker',
    p_status        text  DEFAULT 'ok',
    p_metadata      jsonb DEFAULT '{}'::jsonb
)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
BEGIN
    IF p_executor_name IS NULL OR btrim(p_executor_name) = '' THEN
        RAISE EXCEPTION 'fn_cut_heartbeat_ping: p_executor_name required';
    END IF;
    IF p_executor_name = 'iu_outbound_default' THEN
        RETURN jsonb_build_object('refused', true, 'reason', 'protected_legacy_silent_passive',
                                  'executor_name', p_executor_name);
    END IF;
    IF p_executor_kind IS NULL OR p_executor_kind NOT IN
       ('DOT','Agent','Hermes','Codex','PG_worker','external_worker','future_Kestra_adapter') THEN
        RAISE EXCEPTION 'fn_cut_heartbeat_ping: p_executor_kind % not in 7-vocab', p_executor_kind;
    END IF;
    IF p_status IS NULL OR p_status NOT IN ('ok', 'warn', 'error') THEN
        RAISE EXCEPTION 'fn_cut_heartbeat_ping: p_status % not in {ok,warn,error}', p_status;
    END IF;
    IF coalesce((SELECT value FROM dot_config WHERE key = 'queue.heartbeat.enabled'), '') <> 'true' THEN
        RETURN jsonb_build_object('skipped', true, 'executor_name', p_executor_name);
    END IF;
    RETURN fn_queue_heartbeat_tick(p_executor_name, p_executor_kind, p_status,
        coalesce(p_metadata, '{}'::jsonb) || jsonb_build_object(
            'ping_origin',   'cut_pipeline_caller',
            'ping_function', 'fn_cut_heartbeat_ping',
            'ping_actor',    coalesce(nullif(current_setting('app.actor', true), ''), 'cut_pipeline_operator_external'),
            'ping_at',       now()));
END;
$$;

-- =======================================================================================
-- Views: the three of seed migration 009 (names as spec §4.2 lists them; seed silent on the
-- names) and one reporting view on event_outbox.
-- =======================================================================================
CREATE VIEW v_iu_route_worker_status AS
SELECT c.worker_name,
       c.event_domain,
       c.last_created_at,
       c.last_event_id,
       c.last_run_at,
       c.runs_total,
       c.events_seen,
       c.attempts_written,
       c.dead_lettered,
       fn_iu_core_routes_enabled()  AS routes_enabled,
       fn_iu_route_worker_enabled() AS worker_enabled,
       (SELECT count(*) FROM event_outbox e
         WHERE e.event_domain = c.event_domain
           AND (e.created_at, e.id) > (coalesce(c.last_created_at, '-infinity'::timestamptz),
                                       coalesce(c.last_event_id, '00000000-0000-0000-0000-000000000000'::uuid))) AS backlog,
       (SELECT count(*) FROM iu_route_dead_letter d
         WHERE d.worker_name = c.worker_name AND d.resolved_at IS NULL) AS open_dead_letters
  FROM iu_route_worker_cursor c;

CREATE VIEW v_iu_route_dead_letter_open AS
SELECT d.id, d.worker_name, d.event_id, d.event_domain, d.event_type, d.event_stream, d.route_key,
       d.idempotency_key, d.error_code, d.error_message, d.failed_attempts, d.first_failed_at, d.last_failed_at
  FROM iu_route_dead_letter d
 WHERE d.resolved_at IS NULL;

CREATE VIEW v_iu_route_attempt_summary AS
SELECT a.status, a.route_kind, count(*) AS attempts, max(a.created_at) AS last_attempt_at
  FROM iu_route_attempt a
 GROUP BY a.status, a.route_kind;

-- The reporting view every shared log grows: events per day, domain, type and severity.
CREATE VIEW v_event_outbox_daily AS
SELECT date_trunc('day', e.created_at) AS day,
       e.event_domain,
       e.event_type,
       e.event_severity,
       count(*)          AS events,
       max(e.created_at) AS last_created_at
  FROM event_outbox e
 GROUP BY 1, 2, 3, 4;

-- seed DP4 §2: "fn_iu_route_worker_health() exists but its output is not aggregated."
CREATE FUNCTION fn_iu_route_worker_health(p_worker_name text DEFAULT NULL)
RETURNS jsonb
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    SELECT jsonb_build_object(
        'routes_enabled', fn_iu_core_routes_enabled(),
        'worker_enabled', fn_iu_route_worker_enabled(),
        'workers', coalesce(jsonb_agg(jsonb_build_object(
            'worker', s.worker_name, 'event_domain', s.event_domain,
            'last_run_at', s.last_run_at,
            'last_run_age_seconds', extract(epoch FROM now() - s.last_run_at)::bigint,
            'runs_total', s.runs_total, 'events_seen', s.events_seen,
            'attempts_written', s.attempts_written, 'dead_lettered', s.dead_lettered,
            'backlog', s.backlog, 'open_dead_letters', s.open_dead_letters) ORDER BY s.worker_name), '[]'::jsonb))
      FROM v_iu_route_worker_status s
     WHERE p_worker_name IS NULL OR s.worker_name = p_worker_name
$$;

-- =======================================================================================
-- Grants (seed DP4 §6, seed cut "Granted to workflow_admin only"; the rest seed silent).
-- =======================================================================================
REVOKE ALL ON FUNCTION fn_cut_heartbeat_ping(text, text, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fn_cut_heartbeat_ping(text, text, text, jsonb) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_queue_heartbeat_tick(text, text, text, jsonb) TO dot_executor;
GRANT EXECUTE ON FUNCTION fn_iu_emit_event(text, text, text, text, text, text, text, jsonb) TO dot_executor, workflow_admin;
GRANT EXECUTE ON FUNCTION fn_iu_route_worker_run(text, integer) TO dot_executor, workflow_admin;
GRANT EXECUTE ON FUNCTION fn_iu_route_dead_letter_replay(uuid) TO workflow_admin;
GRANT SELECT ON v_iu_route_worker_status, v_iu_route_dead_letter_open, v_iu_route_attempt_summary,
                v_event_outbox_daily TO workflow_admin;
-- The producer writes its events directly, naming its columns (never relying on order).
GRANT INSERT ON event_outbox TO cutter_agent;

-- =======================================================================================
-- Data
-- =======================================================================================

-- The vocabulary. "mostly system/alert" (seed route worker); iu events over several types
-- and streams (the cut pipeline, unit versions, law articles: seed cut "dieu37", "unit_version
-- txn"); the kb vector sync (seed DP4 §2: "fn_kb_notify_vector_sync ... kb_vector_sync").
INSERT INTO event_type_registry (event_domain, event_type, description, ratified_by, ratified_at)
SELECT d, t, descr, 'council', p.t_first - interval '60 days'
  FROM fixture_params p,
       (VALUES ('system', 'alert',                   'Health and integrity alerts (D31 watchdog, D43 red zones).'),
               ('iu',     'unit_version_published',  'A unit version was published.'),
               ('iu',     'unit_cut_completed',      'The cut pipeline finished a unit.'),
               ('iu',     'unit_version_superseded', 'A unit version was superseded by a newer one.'),
               ('iu',     'law_article_amended',     'A law article was amended.'),
               ('kb',     'vector_sync_completed',   'kb vector sync batch finished.')) v(d, t, descr);

-- Routes (spec §3: "enabled boolean (default false), dry_run boolean (default true)").
-- unit_version_superseded has no route (the worker writes "skipped").
INSERT INTO iu_outbound_route (event_domain, event_type, event_stream, route_key, route_kind, enabled, dry_run, created_at)
SELECT 'iu', t, s, k, 'outbound', en, true, p.t_first - interval '30 days'
  FROM fixture_params p,
       (VALUES ('unit_version_published', 'cut', 'r_unit_version_published', true),
               ('unit_cut_completed',     'cut', 'r_unit_cut_completed',     true),
               ('law_article_amended',    'law', 'r_law_article_amended',    false)) v(t, s, k, en);

-- The bulk of the log, set-based. Row i of rows_bulk: ~3% iu (i % 33 = 7), ~2% kb
-- (i % 50 = 11), the rest system/alert; created_at evenly over the 42 days before now.
INSERT INTO event_outbox (event_domain, event_type, event_stream, delivery_lane, event_severity,
                          event_subject_table, event_subject_ref, safe_payload, occurred_at, created_at)
SELECT CASE g.kind WHEN 'iu' THEN 'iu' WHEN 'kb' THEN 'kb' ELSE 'system' END,
       CASE g.kind WHEN 'iu' THEN (ARRAY['unit_version_published','unit_version_published','unit_version_published','unit_version_published',
                                         'unit_cut_completed','unit_cut_completed','unit_cut_completed',
                                         'unit_version_superseded','unit_version_superseded','law_article_amended'])[g.j % 10 + 1]
                   WHEN 'kb' THEN 'vector_sync_completed'
                   ELSE 'alert' END,
       CASE g.kind WHEN 'iu' THEN (ARRAY['cut','cut','cut','cut','cut','cut','cut','unit_version','unit_version','law'])[g.j % 10 + 1]
                   WHEN 'kb' THEN 'kb_vector_sync'
                   ELSE (ARRAY['healthcheck','d31_watchdog','d43_red_zones'])[g.i % 3 + 1] END,
       CASE WHEN g.kind = 'kb' THEN 'batch'
            WHEN g.kind = 'system' AND g.i % 20 < 5 THEN 'immediate'
            ELSE 'standard' END,
       CASE WHEN g.kind = 'kb' THEN 'debug'
            WHEN g.kind = 'system' AND g.i % 20 = 0 THEN 'critical'
            WHEN g.kind = 'system' AND g.i % 20 < 5 THEN 'warning'
            ELSE 'info' END,
       CASE g.kind WHEN 'iu' THEN (ARRAY['unit_version','unit_version','unit_version','unit_version',
                                         'iu_unit','iu_unit','iu_unit','unit_version','unit_version','law_article'])[g.j % 10 + 1]
                   WHEN 'kb' THEN 'kb_document'
                   ELSE (ARRAY['queue_heartbeat','kb_document','iu_route_worker_cursor'])[g.i % 3 + 1] END,
       CASE g.kind WHEN 'iu' THEN 'UV-' || (100000 + g.j)::text
                   WHEN 'kb' THEN 'KB-' || (g.i % 5000)::text
                   ELSE 'S-' || (g.i % 997)::text END,
       CASE g.kind WHEN 'iu' THEN jsonb_build_object('unit_id', 'U-' || (g.j % 977)::text, 'version', g.j % 13 + 1,
                                                     'law', 'dieu' || (37 + g.j % 9)::text)
                   WHEN 'kb' THEN jsonb_build_object('batch', g.i / 50, 'documents', g.i % 40 + 1)
                   ELSE jsonb_build_object('check', (ARRAY['disk_usage','replication_lag','queue_depth','kb_vector_sync_age'])[g.i % 4 + 1],
                                           'observed', g.i % 100, 'threshold', 80) END,
       g.created_at - make_interval(secs => g.i % 60),
       g.created_at
  FROM (SELECT s.i,
               s.i / 33 AS j,
               CASE WHEN s.i % 33 = 7 THEN 'iu' WHEN s.i % 50 = 11 THEN 'kb' ELSE 'system' END AS kind,
               p.t_first + (s.i - 1) * p.t_step AS created_at
          FROM fixture_params p, generate_series(1, p.rows_bulk) AS s(i)) g;

-- Keys and indexes, built after the bulk load (the end state is the same). The worker's
-- keyset claim reads (event_domain, created_at, id); the reporting view reads created_at.
ALTER TABLE event_outbox ADD CONSTRAINT event_outbox_pkey PRIMARY KEY (id);
CREATE INDEX event_outbox_domain_created_idx ON event_outbox (event_domain, created_at, id);
CREATE INDEX event_outbox_created_at_idx ON event_outbox (created_at);

-- The cursor. The worker last ran at t_last_run; the last event its last run read is the
-- last iu event created at least 90 s before that run. That event was written by a
-- transaction that emitted three events (one created_at, three ids): the keyset (created_at,
-- id) had reached the middle one of them, so one of the three lies before the cursor and
-- one after it.
CREATE TEMP TABLE fixture_cursor AS
SELECT e.created_at AS t_cursor
  FROM event_outbox e, fixture_params p
 WHERE e.event_domain = 'iu' AND e.created_at <= p.t_last_run - interval '90 seconds'
 ORDER BY e.created_at DESC, e.id DESC
 LIMIT 1;

INSERT INTO event_outbox (event_domain, event_type, event_stream, delivery_lane, event_severity,
                          event_subject_table, event_subject_ref, safe_payload, occurred_at, created_at)
SELECT 'iu', 'unit_version_published', 'cut', 'standard', 'info', 'unit_version', 'UV-CURSOR-' || k::text,
       jsonb_build_object('unit_id', 'U-cursor', 'version', k), c.t_cursor, c.t_cursor
  FROM fixture_cursor c, generate_series(1, 2) AS k;

ALTER TABLE fixture_cursor ADD COLUMN cursor_id uuid;
UPDATE fixture_cursor c
   SET cursor_id = (SELECT e.id FROM event_outbox e
                     WHERE e.event_domain = 'iu' AND e.created_at = c.t_cursor
                     ORDER BY e.id OFFSET 1 LIMIT 1);

-- The late commit (seed: "A row committed late with an earlier created_at (a long-running
-- unit_version txn) could be skipped"): a unit_version transaction began 17 minutes before
-- the cursor's event, wrote three iu events, and committed after the worker's last run. Its
-- rows sort before the cursor and were never read: no attempt.
CREATE TEMP TABLE fixture_late AS
SELECT gen_random_uuid() AS id, k FROM generate_series(1, 3) AS k;

INSERT INTO event_outbox (id, event_domain, event_type, event_stream, delivery_lane, event_severity,
                          event_subject_table, event_subject_ref, safe_payload, occurred_at, created_at)
SELECT l.id, 'iu', 'unit_version_published', 'cut', 'standard', 'info', 'unit_version', 'UV-LATE-' || l.k::text,
       jsonb_build_object('unit_id', 'U-late', 'version', l.k), c.t_cursor - interval '17 minutes',
       c.t_cursor - interval '17 minutes'
  FROM fixture_late l, fixture_cursor c;

-- The iu events the worker passed: keyset at or before the cursor, except the late commit.
CREATE TEMP TABLE fixture_passed AS
SELECT e.*
  FROM event_outbox e, fixture_cursor c
 WHERE e.event_domain = 'iu'
   AND (e.created_at, e.id) <= (c.t_cursor, c.cursor_id)
   AND e.id NOT IN (SELECT id FROM fixture_late);

-- The delivery incident: for a while route r_unit_cut_completed was switched to dry_run =
-- false; the six unit_cut_completed events the worker read then hit the unbuilt delivery
-- seam (0A000) and were dead-lettered. The route is back to dry_run = true; an operator
-- replayed the first two (resolved), four are still open.
CREATE TEMP TABLE fixture_incident AS
SELECT e.id, row_number() OVER (ORDER BY e.created_at, e.id) AS n
  FROM (SELECT f.* FROM fixture_passed f, fixture_cursor c
         WHERE f.event_type = 'unit_cut_completed' AND f.created_at <= c.t_cursor - interval '2 days'
         ORDER BY f.created_at DESC, f.id DESC LIMIT 6) e;

-- One attempt per passed event (attempt_no 1), written by the worker a few minutes after
-- the event (never after its last run), plus the two replays (attempt_no 2), in time order.
INSERT INTO iu_route_attempt (event_ref, route_kind, status, idempotency_key, attempt_no, detail, error, created_at)
SELECT x.event_ref, x.route_kind, x.status, x.idempotency_key, x.attempt_no, x.detail, x.error, x.created_at
  FROM (SELECT e.id AS event_ref,
               r.route_kind,
               CASE WHEN i.id IS NOT NULL THEN 'failed'
                    WHEN r.route_key IS NULL THEN 'skipped'
                    WHEN NOT r.enabled THEN 'disabled'
                    ELSE 'dry_run' END AS status,
               'iu_wrk:iu_outbound_default:' || coalesce(r.route_key, 'none') || ':' || e.id::text AS idempotency_key,
               1 AS attempt_no,
               jsonb_build_object('worker', 'iu_outbound_default', 'route_key', r.route_key,
                                  'event_type', e.event_type, 'event_stream', e.event_stream) AS detail,
               CASE WHEN i.id IS NOT NULL
                    THEN '0A000: fn_iu_route_deliver: delivery not built (route r_unit_cut_completed, event ' || e.id::text || ')' END AS error,
               least(e.created_at + interval '3 minutes', p.t_last_run) AS created_at
          FROM fixture_passed e
          CROSS JOIN fixture_params p
          LEFT JOIN iu_outbound_route r
                 ON r.event_domain = e.event_domain AND r.event_type = e.event_type AND r.event_stream = e.event_stream
          LEFT JOIN fixture_incident i ON i.id = e.id
        UNION ALL
        SELECT e.id, r.route_kind, 'dry_run',
               'iu_wrk:iu_outbound_default:' || r.route_key || ':' || e.id::text, 2,
               jsonb_build_object('worker', 'iu_outbound_default', 'route_key', r.route_key, 'replay_of', 'dead_letter'),
               NULL,
               c.t_cursor - interval '1 day' + i.n * interval '1 minute'
          FROM fixture_incident i
          JOIN fixture_passed e ON e.id = i.id
          JOIN iu_outbound_route r ON r.route_key = 'r_unit_cut_completed'
          CROSS JOIN fixture_cursor c
         WHERE i.n <= 2) x
 ORDER BY x.created_at, x.event_ref, x.attempt_no;

INSERT INTO iu_route_dead_letter (worker_name, event_id, event_domain, event_type, event_stream, route_key,
                                  idempotency_key, event_snapshot, error_code, error_message, failed_attempts,
                                  first_failed_at, last_failed_at, resolved_at, resolution, resolved_by)
SELECT 'iu_outbound_default', e.id, e.event_domain, e.event_type, e.event_stream, 'r_unit_cut_completed',
       a.idempotency_key, to_jsonb(e), '0A000',
       'fn_iu_route_deliver: delivery not built (route r_unit_cut_completed, event ' || e.id::text || ')',
       1, a.created_at, a.created_at,
       CASE WHEN i.n <= 2 THEN c.t_cursor - interval '1 day' + i.n * interval '1 minute' END,
       CASE WHEN i.n <= 2 THEN 'replayed_dry_run' END,
       CASE WHEN i.n <= 2 THEN 'ops_oncall' END
  FROM fixture_incident i
  JOIN event_outbox e ON e.id = i.id
  JOIN iu_route_attempt a ON a.event_ref = e.id AND a.attempt_no = 1
  CROSS JOIN fixture_cursor c;

-- The worker's cursor row (runtime 060 seeded it; the counters are what its runs added up to).
INSERT INTO iu_route_worker_cursor (worker_name, event_domain, last_created_at, last_event_id, events_seen,
                                    attempts_written, dead_lettered, runs_total, last_run_at, last_run_summary,
                                    created_at)
SELECT 'iu_outbound_default', 'iu', c.t_cursor, c.cursor_id,
       (SELECT count(*) FROM fixture_passed),
       (SELECT count(*) FROM iu_route_attempt WHERE attempt_no = 1),
       (SELECT count(*) FROM iu_route_dead_letter),
       (SELECT count(DISTINCT date_trunc('hour', created_at)) FROM iu_route_attempt WHERE attempt_no = 1),
       p.t_last_run,
       jsonb_build_object('worker', 'iu_outbound_default', 'gated', false, 'claimed', 2, 'attempts_written', 2,
                          'dead_lettered', 0, 'dry_run', 2, 'disabled', 0, 'skipped', 0, 'failed', 0, 'sent', 0,
                          'cursor', jsonb_build_object('last_created_at', c.t_cursor, 'last_event_id', c.cursor_id),
                          'run_at', p.t_last_run),
       p.t_first - interval '1 day'
  FROM fixture_cursor c, fixture_params p;

-- Heartbeats: the state at the cut seed's exit ("E.4 post-E.3 read-back 3 rows:
-- cut_pipeline_operator, dieu45_phase3_pilot, iu_outbound_default"), plus one scoped operator
-- named by its convention ("cut_pipeline_operator_<scope> (e.g. cut_pipeline_operator_dieu37
-- ...)"). iu_outbound_default: "PG_worker | warn | ~101h (frozen 2026-05-22)".
INSERT INTO queue_heartbeat (executor_name, executor_kind, status, last_tick_at, ticks_total, metadata, created_at)
SELECT v.name, v.kind, v.status, p.t_now - v.age, v.ticks, v.meta, p.t_first - interval '5 days'
  FROM fixture_params p,
       (VALUES ('cut_pipeline_operator',        'external_worker', 'ok',   interval '40 seconds', 1::bigint,
                '{"mig":"053","phase":"E","ping_origin":"cut_pipeline_caller","ping_function":"fn_cut_heartbeat_ping","ping_actor":"cut_pipeline_operator_external"}'::jsonb),
               ('dieu45_phase3_pilot',          'external_worker', 'ok',   interval '2 hours',   37::bigint,
                '{"phase":"3","pilot":"dieu45"}'::jsonb),
               ('iu_outbound_default',          'PG_worker',       'warn', interval '101 hours', 1604::bigint,
                '{"worker":"iu_outbound_default","source":"phase2_primitive"}'::jsonb),
               ('cut_pipeline_operator_dieu37', 'external_worker', 'ok',   interval '25 minutes', 212::bigint,
                '{"scope":"dieu37","ping_origin":"cut_pipeline_caller","ping_function":"fn_cut_heartbeat_ping","ping_actor":"cut_pipeline_operator_external"}'::jsonb)
       ) v(name, kind, status, age, ticks, meta);

-- dot_config: both gates open when the worker last ran (it went silent for want of an
-- invoker, not a gate), the heartbeat gate open (seed cut E.3 "tick OK, row written"), and
-- the hc executor's last run (seed DP4 §2, Q6: "Should hc_executor_last_run dot_config key
-- be migrated to queue_heartbeat row, or coexist?" — it coexists).
INSERT INTO dot_config (key, value, updated_at)
SELECT v.key, v.value, v.at
  FROM fixture_params p,
       LATERAL (VALUES ('iu_core.routes_enabled',       'true', p.t_first - interval '20 days'),
                       ('iu_core.route_worker_enabled', 'true', p.t_first - interval '1 day'),
                       ('queue.heartbeat.enabled',      'true', p.t_now - interval '3 days'),
                       ('hc_executor_last_run',
                        to_char((p.t_now - interval '1 minute') AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                        p.t_now - interval '1 minute')) v(key, value, at);

-- goose history: version 0 when the table was created, then 1..53 in order; 052 and 053
-- are the recent heartbeat migrations, the rest spread over the year before.
INSERT INTO goose_db_version (version_id, is_applied, tstamp)
SELECT v, true,
       (CASE WHEN v = 53 THEN p.t_now - interval '3 hours'
             WHEN v = 52 THEN p.t_now - interval '2 days'
             ELSE p.t_first - interval '320 days' + v * interval '6 days' END) AT TIME ZONE 'UTC'
  FROM fixture_params p, generate_series(0, 53) AS v
 ORDER BY v;

COMMIT;

-- A production table has been vacuumed and analysed.
VACUUM (ANALYZE) event_outbox;
ANALYZE;
