-- 008_route_worker_substrate.sql
--
-- Adds the tables the route worker keeps its state in:
--   queue_heartbeat          executor liveness (the worker registers a PG_worker row and
--                            ticks it on every run). Created here, in its final shape, because
--                            the worker is its first writer; the heartbeat functions, the
--                            stale-check and v_queue_health come in 010 and later.
--   iu_route_worker_cursor   one row per named worker: its position in event_outbox and
--                            its run counters. The position is a pair of snapshots, not a
--                            keyset on created_at (see 009 for why).
--   iu_route_dead_letter     events the worker could not route or deliver, with the whole
--                            event row so a replay needs nothing from event_outbox. The
--                            worker's retry queue: resolved, never deleted.

-- +goose Up

-- +goose StatementBegin
CREATE FUNCTION fn_queue_executor_kinds()
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- The executor vocabulary (seven words), in one place: the table's CHECK and
    -- every function that takes an executor kind read it from here.
    SELECT ARRAY['DOT', 'Agent', 'Hermes', 'Codex', 'PG_worker', 'external_worker', 'future_Kestra_adapter']
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION fn_queue_executor_kinds() FROM PUBLIC;

-- +goose StatementBegin
CREATE FUNCTION fn_queue_heartbeat_defaults(
    p_executor_kind              text,
    OUT expected_cadence_seconds integer,
    OUT stale_threshold_seconds  integer
)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- The cadence and stale threshold an executor gets when nobody registered its own, in
    -- one place. A route worker (PG_worker) beats on every run; cron runs it every minute and
    -- a batch may take a while under load, so it is stale after five missed minutes. Any other
    -- executor first seen through the permissive tick is stale after three missed beats.
    SELECT 60, CASE WHEN p_executor_kind = 'PG_worker' THEN 300 ELSE 180 END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_queue_actor(p_actor text DEFAULT NULL, p_caller text DEFAULT 'fn_queue_actor')
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = public, pg_temp
AS $$
    -- Who the caller says is acting, for every *_by audit column of the package
    -- (registered_by, last_beat_by, paused_by, reset_by, resolved_by): the explicit
    -- argument, else the session's app.actor setting, else the login (session_user, not
    -- current_user, which inside a SECURITY DEFINER function is the owner). Blank counts as
    -- absent. A claim, not an identity: the *_session_user audit columns record the login
    -- next to it. Bounded like a name (200 bytes) so an audit column cannot store data.
DECLARE
    v_actor text := coalesce(nullif(btrim(p_actor), ''), nullif(btrim(current_setting('app.actor', true)), ''),
                             session_user::text);
BEGIN
    IF octet_length(v_actor) > 200 THEN
        RAISE EXCEPTION '%: p_actor (or app.actor) is % bytes long, at most 200 allowed', p_caller, octet_length(v_actor)
            USING ERRCODE = '22023', HINT = 'Name the actor, e.g. ''ops:alice'' or ''agent:codex-7''.';
    END IF;
    RETURN v_actor;
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION fn_queue_heartbeat_defaults(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_actor(text, text) FROM PUBLIC;

CREATE TABLE queue_heartbeat (
    executor_id              text        PRIMARY KEY CHECK (executor_id <> ''),
    executor_kind            text        NOT NULL
        CHECK (executor_kind = ANY (fn_queue_executor_kinds())),
    domain_scope             text[]      NOT NULL DEFAULT '{}',
    status                   text        NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'warn', 'error')),
    last_beat_at             timestamptz NOT NULL DEFAULT now(),
    last_beat_payload        jsonb       NOT NULL DEFAULT '{}'::jsonb,
    ticks_total              bigint      NOT NULL DEFAULT 0,
    expected_cadence_seconds integer     NOT NULL CHECK (expected_cadence_seconds > 0),
    stale_threshold_seconds  integer     NOT NULL CHECK (stale_threshold_seconds > 0),
    registered_at            timestamptz NOT NULL DEFAULT now(),
    registered_by            text        NOT NULL DEFAULT current_user,
    -- The login that really registered it: *_by columns hold the actor a caller claims
    -- (p_actor, app.actor), the *_session_user twin what PostgreSQL authenticated.
    registered_session_user  text        NOT NULL DEFAULT session_user,
    -- planned maintenance: a paused executor raises no alert (fn_queue_heartbeat_pause/resume)
    paused_at                timestamptz,
    paused_reason            text,
    paused_by                text,
    CONSTRAINT queue_heartbeat_payload_object CHECK (jsonb_typeof(last_beat_payload) = 'object'),
    CONSTRAINT queue_heartbeat_payload_hygiene CHECK (fn_iu_payload_is_clean(last_beat_payload))
);

COMMENT ON TABLE queue_heartbeat IS
    'One row per executor. last_beat_at moves on every beat, work or no work, so "alive and idle" differs from "silently dead".';
COMMENT ON COLUMN queue_heartbeat.executor_id IS 'Also called executor_name (by the cut-pipeline ping).';
COMMENT ON COLUMN queue_heartbeat.last_beat_at IS 'Also called last_tick_at (by the cut-pipeline ping).';
COMMENT ON COLUMN queue_heartbeat.last_beat_payload IS 'Also called metadata (by the cut-pipeline ping). Signal only: hygiene-checked at any depth.';

CREATE TABLE iu_route_worker_cursor (
    worker_name       text        PRIMARY KEY CHECK (worker_name <> ''),
    -- The key of the worker's transaction-scoped advisory lock (one run at a time): taking
    -- it writes nothing, where a row lock would assign a transaction id to every idle run.
    lock_id           integer     GENERATED ALWAYS AS IDENTITY UNIQUE,
    event_domain      text        NOT NULL DEFAULT 'iu' CHECK (event_domain <> ''),
    -- The last event routed, for people: (created_at, id) of the newest decision.
    last_created_at   timestamptz,
    last_event_id     uuid,
    -- The position, for the worker (PgQ-style snapshot difference, see 009):
    --   done_snapshot    every row visible in it is routed (NULL: the start of the stream)
    --   window_snapshot  the window being consumed: visible here, not in done_snapshot
    --   window_txid/window_event_id  keyset position inside the open window
    done_snapshot     pg_snapshot,
    window_snapshot   pg_snapshot,
    window_txid       xid8,
    window_event_id   uuid,
    -- The cluster the snapshots belong to (pg_control_system().system_identifier).
    -- Transaction ids restart in another cluster (dump/restore): a mismatch is refused.
    system_identifier bigint,
    events_seen       bigint      NOT NULL DEFAULT 0,
    attempts_written  bigint      NOT NULL DEFAULT 0,
    dead_lettered     bigint      NOT NULL DEFAULT 0,
    runs_total        bigint      NOT NULL DEFAULT 0,
    last_run_at       timestamptz,
    last_run_summary  jsonb       NOT NULL DEFAULT '{}'::jsonb,
    registered_at     timestamptz NOT NULL DEFAULT now(),
    registered_by     text        NOT NULL DEFAULT current_user,
    registered_session_user text  NOT NULL DEFAULT session_user,
    reset_at          timestamptz,
    reset_by          text,
    reset_session_user text
);

COMMENT ON TABLE iu_route_worker_cursor IS
    'One row per route worker: its own position in event_outbox (snapshot pair + keyset) and run counters.';

-- Running audit counters per (worker, status), moved in the transaction that writes the
-- attempts (a run, a replay), so v_iu_route_attempt_summary reads a handful of rows
-- instead of counting the whole audit log on every look.
CREATE TABLE iu_route_attempt_tally (
    worker_name text        NOT NULL,
    status      text        NOT NULL,
    attempts    bigint      NOT NULL DEFAULT 0,   -- attempt rows written with this status
    replays     bigint      NOT NULL DEFAULT 0,   -- of which replays (attempt_no > 1)
    first_at    timestamptz NOT NULL DEFAULT now(),
    last_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (worker_name, status)
);

COMMENT ON TABLE iu_route_attempt_tally IS
    'Running counts of iu_route_attempt rows per worker and status (written with the attempts; read by v_iu_route_attempt_summary).';

CREATE TABLE iu_route_dead_letter (
    id               uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    worker_name      text        NOT NULL,
    event_id         uuid        NOT NULL,
    event_domain     text        NOT NULL,
    event_type       text        NOT NULL,
    event_stream     text        NOT NULL,
    route_key        text,
    idempotency_key  text        NOT NULL UNIQUE,
    event_snapshot   jsonb       NOT NULL,
    error_code       text,
    error_message    text,
    failed_attempts  integer     NOT NULL DEFAULT 1 CHECK (failed_attempts > 0),
    first_failed_at  timestamptz NOT NULL DEFAULT now(),
    last_failed_at   timestamptz NOT NULL DEFAULT now(),
    resolved_at      timestamptz,
    resolution       text,
    resolved_by      text,
    resolved_session_user text,
    CONSTRAINT iu_route_dead_letter_resolution_ck CHECK ((resolved_at IS NULL) = (resolution IS NULL))
);

COMMENT ON TABLE iu_route_dead_letter IS
    'Route worker retry queue. Replay with fn_iu_route_dead_letter_replay; rows are resolved, never deleted.';

-- Open dead letters by domain: v_queue_health aggregates them, so keep that an index scan.
CREATE INDEX iu_route_dead_letter_open_idx ON iu_route_dead_letter (event_domain, last_failed_at)
    WHERE resolved_at IS NULL;

-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_dead_letter_no_delete()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'fn_iu_route_dead_letter_no_delete: dead letters are resolved, never deleted: % rejected', TG_OP
        USING ERRCODE = 'IU001',
              HINT = 'Replay it (fn_iu_route_dead_letter_replay) or resolve it by setting resolved_at, resolution and resolved_by.';
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_dead_letter_immutable()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    -- A dead letter is evidence: the event it kept (event_snapshot), its identity (id,
    -- event_id, idempotency_key, worker, domain, type, stream, route_key) and when it first
    -- failed never change, for the owner too. What may change is what a replay or an
    -- operator records about it: the resolution (resolved_at, resolution, resolved_by) and
    -- the failure counters a failed replay moves (failed_attempts, last_failed_at,
    -- error_code, error_message). The login that resolved it is stamped here, so a spoofed
    -- resolved_by (app.actor) is visible next to it.
    IF (to_jsonb(NEW) - ARRAY['resolved_at', 'resolution', 'resolved_by', 'resolved_session_user',
                              'failed_attempts', 'last_failed_at', 'error_code', 'error_message'])
       IS DISTINCT FROM
       (to_jsonb(OLD) - ARRAY['resolved_at', 'resolution', 'resolved_by', 'resolved_session_user',
                              'failed_attempts', 'last_failed_at', 'error_code', 'error_message']) THEN
        RAISE EXCEPTION 'fn_iu_route_dead_letter_immutable: only the resolution and failure counters of a dead letter may change'
            USING ERRCODE = 'IU001',
                  HINT = 'Resolve it (resolved_at, resolution, resolved_by) or replay it (fn_iu_route_dead_letter_replay); the event it kept stays as it was.';
    END IF;
    IF (NEW.resolved_at, NEW.resolution, NEW.resolved_by) IS DISTINCT FROM (OLD.resolved_at, OLD.resolution, OLD.resolved_by) THEN
        NEW.resolved_session_user := session_user;
    ELSE
        NEW.resolved_session_user := OLD.resolved_session_user;
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_cursor_stamp_reset()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    -- reset_by holds the actor a caller claims; the login that really reset the cursor is
    -- stamped next to it. Fires only for updates that name reset_by (a reset), never for a
    -- run's position updates.
    NEW.reset_session_user := session_user;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER trg_iu_route_worker_cursor_stamp_reset
    BEFORE UPDATE OF reset_by ON iu_route_worker_cursor
    FOR EACH ROW EXECUTE FUNCTION fn_iu_route_worker_cursor_stamp_reset();
CREATE TRIGGER trg_iu_route_dead_letter_immutable
    BEFORE UPDATE ON iu_route_dead_letter
    FOR EACH ROW EXECUTE FUNCTION fn_iu_route_dead_letter_immutable();
CREATE TRIGGER trg_iu_route_dead_letter_no_delete
    BEFORE DELETE ON iu_route_dead_letter
    FOR EACH ROW EXECUTE FUNCTION fn_iu_route_dead_letter_no_delete();
CREATE TRIGGER trg_iu_route_dead_letter_no_truncate
    BEFORE TRUNCATE ON iu_route_dead_letter
    FOR EACH STATEMENT EXECUTE FUNCTION fn_iu_route_dead_letter_no_delete();

REVOKE ALL ON FUNCTION fn_iu_route_dead_letter_no_delete() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_dead_letter_immutable() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_cursor_stamp_reset() FROM PUBLIC;

-- +goose Down
DROP TABLE iu_route_dead_letter;
DROP FUNCTION fn_iu_route_dead_letter_no_delete();
DROP TABLE iu_route_attempt_tally;
DROP FUNCTION fn_iu_route_dead_letter_immutable();
DROP TABLE iu_route_worker_cursor;
DROP FUNCTION fn_iu_route_worker_cursor_stamp_reset();
DROP TABLE queue_heartbeat;
DROP FUNCTION fn_queue_actor(text, text);
DROP FUNCTION fn_queue_heartbeat_defaults(text);
DROP FUNCTION fn_queue_executor_kinds();
