-- 008_route_worker_substrate.sql
--
-- The tables the route worker keeps its state in (a table migration: from the first release
-- on it is never edited again):
--   queue_heartbeat          executor liveness (the worker registers a PG_worker row and
--                            beats it on every run). Created here because the worker is its
--                            first writer; the heartbeat functions, the stale-check and
--                            v_queue_health come with queue health (010, 011).
--   iu_route_worker_cursor   one row per named worker: its position in event_outbox and
--                            its run counters. The position is a pair of snapshots, not a
--                            keyset on created_at (sql/functions/route_worker/README.md).
--   iu_route_attempt_tally   running audit counts per worker and status
--   iu_route_dead_letter     events the worker could not route or deliver, with the whole
--                            event row so a replay needs nothing from event_outbox. The
--                            worker's retry queue: resolved, never deleted.
--   iu_core.iu_route_run_tally  what a run has done so far (a type the run's steps pass on)
--   iu_core.iu_route_window     a worker's position (done, window, keyset), passed as one value
--
-- On a database the first generation built, its heartbeat, cursor and dead-letter tables are
-- adopted in place (iu_core.fn_iu_adopt_heartbeat, _cursor, _dead_letter): every row kept,
-- each legacy worker positioned after exactly what it audited. Then its functions and views
-- of package names are made ready for the package's (fn_iu_adopt_legacy_callables).

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    IF to_regclass('public.queue_heartbeat') IS NOT NULL THEN
        PERFORM iu_core.fn_iu_adopt_heartbeat();
        RETURN;
    END IF;
    CREATE TABLE public.queue_heartbeat (
        executor_id              text        PRIMARY KEY CHECK (executor_id <> ''),
        executor_kind            text        NOT NULL
            CHECK (executor_kind = ANY (iu_core.fn_queue_executor_kinds())),
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
        -- The login (session_user) that paused it.
        paused_session_user      text,
        -- The actor of the last beat as the caller claims it (p_actor, app.actor or the login),
        -- and the login that wrote it: what PostgreSQL authenticated.
        last_beat_by             text,
        last_beat_session_user   text,
        -- The owning role (fn_queue_heartbeat_register p_owner_role): only its members' sessions
        -- may beat the executor. NULL: any dot_executor.
        owner_role               text,
        CONSTRAINT queue_heartbeat_payload_object CHECK (jsonb_typeof(last_beat_payload) = 'object'),
        CONSTRAINT queue_heartbeat_payload_hygiene CHECK (iu_core.fn_iu_payload_is_clean(last_beat_payload))
    );
END;
$$;
-- +goose StatementEnd

COMMENT ON TABLE public.queue_heartbeat IS
    'One row per executor. last_beat_at moves on every beat, work or no work, so "alive and idle" differs from "silently dead".';

COMMENT ON COLUMN public.queue_heartbeat.executor_id IS 'Also called executor_name (by the cut-pipeline ping).';

COMMENT ON COLUMN public.queue_heartbeat.last_beat_at IS 'Also called last_tick_at (by the cut-pipeline ping).';

COMMENT ON COLUMN public.queue_heartbeat.last_beat_payload IS 'Also called metadata (by the cut-pipeline ping). Signal only: hygiene-checked at any depth.';

-- +goose StatementBegin
DO $$
BEGIN
    IF to_regclass('public.iu_route_worker_cursor') IS NOT NULL THEN
        PERFORM iu_core.fn_iu_adopt_cursor();
        RETURN;
    END IF;
    CREATE TABLE public.iu_route_worker_cursor (
        worker_name       text        PRIMARY KEY CHECK (worker_name <> ''),
        -- The key of the worker's transaction-scoped advisory lock (one run at a time): taking
        -- it writes nothing, where a row lock would assign a transaction id to every idle run.
        lock_id           integer     GENERATED ALWAYS AS IDENTITY UNIQUE,
        event_domain      text        NOT NULL DEFAULT 'iu' CHECK (event_domain <> ''),
        -- The last event routed, for people: (created_at, id) of the newest decision.
        last_created_at   timestamptz,
        last_event_id     uuid,
        -- The position, for the worker: a PgQ-style snapshot difference, so a late commit is
        -- never skipped and a long transaction holds back only its own rows:
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
END;
$$;
-- +goose StatementEnd

COMMENT ON TABLE public.iu_route_worker_cursor IS
    'One row per route worker: its own position in event_outbox (snapshot pair + keyset) and run counters.';

-- Running audit counters per (worker, status), moved in the transaction that writes the
-- attempts (a run, a replay), so v_iu_route_attempt_summary reads a handful of rows
-- instead of counting the whole audit log on every look.
CREATE TABLE public.iu_route_attempt_tally (
    worker_name text        NOT NULL,
    status      text        NOT NULL,
    attempts    bigint      NOT NULL DEFAULT 0,   -- attempt rows written with this status
    replays     bigint      NOT NULL DEFAULT 0,   -- of which replays (attempt_no > 1)
    first_at    timestamptz NOT NULL DEFAULT now(),
    last_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (worker_name, status)
);

COMMENT ON TABLE public.iu_route_attempt_tally IS
    'Running counts of iu_route_attempt rows per worker and status (written with the attempts; read by v_iu_route_attempt_summary).';

-- +goose StatementBegin
DO $$
BEGIN
    IF to_regclass('public.iu_route_dead_letter') IS NOT NULL THEN
        PERFORM iu_core.fn_iu_adopt_dead_letter();
        RETURN;
    END IF;
    CREATE TABLE public.iu_route_dead_letter (
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
END;
$$;
-- +goose StatementEnd

COMMENT ON TABLE public.iu_route_dead_letter IS
    'Route worker retry queue. Replay with fn_iu_route_dead_letter_replay; rows are resolved, never deleted.';

-- Open dead letters by domain: v_queue_health aggregates them, so keep that an index scan.
CREATE INDEX IF NOT EXISTS iu_route_dead_letter_open_idx ON public.iu_route_dead_letter (event_domain, last_failed_at)
    WHERE resolved_at IS NULL;

CREATE TRIGGER trg_iu_route_worker_cursor_stamp_reset
    BEFORE UPDATE OF reset_by ON public.iu_route_worker_cursor
    FOR EACH ROW EXECUTE FUNCTION iu_core.fn_iu_route_worker_cursor_stamp_reset();

CREATE TRIGGER trg_iu_route_dead_letter_immutable
    BEFORE UPDATE ON public.iu_route_dead_letter
    FOR EACH ROW EXECUTE FUNCTION iu_core.fn_iu_route_dead_letter_immutable();

CREATE TRIGGER trg_iu_route_dead_letter_no_delete
    BEFORE DELETE ON public.iu_route_dead_letter
    FOR EACH ROW EXECUTE FUNCTION iu_core.fn_iu_route_dead_letter_no_delete();

CREATE TRIGGER trg_iu_route_dead_letter_no_truncate
    BEFORE TRUNCATE ON public.iu_route_dead_letter
    FOR EACH STATEMENT EXECUTE FUNCTION iu_core.fn_iu_route_dead_letter_no_delete();

-- ---------------------------------------------------------------------------------------
-- iu_route_run_tally: what a run has done so far, threaded through the page functions
-- (each takes the tally and returns it with its page added), so the run itself is a short
-- loop. deliver_* hold the current page's events bound for the delivery seam.
-- ---------------------------------------------------------------------------------------
CREATE TYPE iu_core.iu_route_run_tally AS (
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


-- +goose StatementBegin
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM iu_core.iu_adoption) THEN
        RETURN;
    END IF;
    -- An adopted audit log: the running counts start from its rows.
    IF EXISTS (SELECT 1 FROM iu_core.iu_adoption WHERE object = 'public.iu_route_attempt') THEN
        INSERT INTO public.iu_route_attempt_tally (worker_name, status, attempts, replays, first_at, last_at)
        SELECT a.worker_name, a.status, count(*), count(*) FILTER (WHERE a.attempt_no > 1), min(a.created_at), max(a.created_at)
          FROM public.iu_route_attempt a
         WHERE a.worker_name IS NOT NULL
         GROUP BY a.worker_name, a.status;
    END IF;
    -- The first generation's functions and views of package names, ready for the package's.
    RAISE NOTICE 'iu-core: the first generation''s callables: %', iu_core.fn_iu_adopt_legacy_callables();
END;
$$;
-- +goose StatementEnd

-- The position of a worker in its window, as the run passes it to the claim and the page
-- functions: the done snapshot (every row visible in it is routed; the start of the stream
-- is '1:1:'), the window being consumed (rows visible in it and not in done), and the
-- keyset position inside that window. The cursor stores the same four values.
CREATE TYPE iu_core.iu_route_window AS (
    done_snapshot   pg_snapshot,
    window_snapshot pg_snapshot,
    after_txid      xid8,
    after_id        uuid
);

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    -- The first generation's functions and views, as they were (the package's are gone: 009's Down ran first).
    PERFORM iu_core.fn_iu_unadopt_callables();
END;
$$;
-- +goose StatementEnd
DROP TYPE iu_core.iu_route_window;
DROP TYPE iu_core.iu_route_run_tally;
-- +goose StatementBegin
DO $$
DECLARE
    v_t text;
BEGIN
    PERFORM iu_core.fn_iu_require_empty_history_at(8);
    FOREACH v_t IN ARRAY ARRAY['public.iu_route_dead_letter', 'public.iu_route_worker_cursor', 'public.queue_heartbeat'] LOOP
        IF EXISTS (SELECT 1 FROM iu_core.iu_adoption WHERE object = v_t) THEN
            PERFORM iu_core.fn_iu_unadopt(v_t);
        ELSE
            EXECUTE format('DROP TABLE %s', v_t);
        END IF;
    END LOOP;
END;
$$;
-- +goose StatementEnd
DROP TABLE public.iu_route_attempt_tally;
