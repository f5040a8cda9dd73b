-- 004_iu_route_attempt.sql
--
-- the per-event audit sink of the route worker: exactly one row per event and route
-- decision (attempt_no 1), plus one more per replay (attempt_no 2, 3, ...).
--
-- UNIQUE (idempotency_key, attempt_no) is the second idempotency layer: a re-scan after a
-- cursor reset writes nothing twice (ON CONFLICT DO NOTHING). Audit rows are never
-- changed or removed, so UPDATE, DELETE and TRUNCATE are rejected.
--
-- A table migration: from the first release on it is never edited again.

-- +goose Up
CREATE TABLE public.iu_route_attempt (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_ref       uuid        NOT NULL,
    worker_name     text,
    route_key       text,
    route_kind      text,
    status          text        NOT NULL
                    CHECK (status IN ('dry_run', 'disabled', 'skipped', 'failed', 'sent')),
    idempotency_key text        NOT NULL,
    attempt_no      integer     NOT NULL DEFAULT 1 CHECK (attempt_no > 0),
    detail          jsonb       NOT NULL DEFAULT '{}'::jsonb,
    error_code      text,
    error_message   text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    -- The routed event's txid (replays: from the dead letter's snapshot). 017 partitions the
    -- table by it, so every attempt of one event lands in one partition; no default: every
    -- writer passes it.
    event_txid      xid8        NOT NULL,
    CONSTRAINT iu_route_attempt_key_attempt_uq UNIQUE (idempotency_key, attempt_no)
);

COMMENT ON TABLE public.iu_route_attempt IS
    'Route worker audit: one row per event decision (attempt_no 1) and per replay. Never changed or removed.';

CREATE TRIGGER trg_iu_route_attempt_immutable
    BEFORE UPDATE OR DELETE ON public.iu_route_attempt
    FOR EACH ROW EXECUTE FUNCTION iu_core.fn_iu_route_attempt_immutable();

CREATE TRIGGER trg_iu_route_attempt_no_truncate
    BEFORE TRUNCATE ON public.iu_route_attempt
    FOR EACH STATEMENT EXECUTE FUNCTION iu_core.fn_iu_route_attempt_immutable();

-- +goose Down
DROP TABLE public.iu_route_attempt;
