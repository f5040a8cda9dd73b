-- 004_iu_route_attempt.sql
--
-- the per-event audit sink of the route worker: exactly one row per event and route
-- decision (attempt_no 1), plus one more per replay (attempt_no 2, 3, ...).
--
-- UNIQUE (idempotency_key, attempt_no) is the second idempotency layer: a re-scan after a
-- cursor reset writes nothing twice (ON CONFLICT DO NOTHING). Audit rows are never
-- changed or removed, so UPDATE, DELETE and TRUNCATE are rejected.
--
-- A table migration: from the first release on it is never edited again. Created here on a
-- new database; the first generation's table is adopted in place instead
-- (iu_core.fn_iu_adopt_route_attempt): every row kept, its idempotency keys valid as they are.

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    IF to_regclass('public.iu_route_attempt') IS NOT NULL THEN
        RAISE NOTICE 'iu-core: adopting the existing iu_route_attempt: %', iu_core.fn_iu_adopt_route_attempt();
        RETURN;
    END IF;
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
        -- The routed event's txid (replays: from the dead letter's snapshot). 013 partitions the
        -- table by it, so every attempt of one event lands in one partition; no default: every
        -- writer passes it.
        event_txid      xid8        NOT NULL,
        CONSTRAINT iu_route_attempt_key_attempt_uq UNIQUE (idempotency_key, attempt_no)
    );

    CREATE TRIGGER trg_iu_route_attempt_immutable
        BEFORE UPDATE OR DELETE ON public.iu_route_attempt
        FOR EACH ROW EXECUTE FUNCTION iu_core.fn_iu_route_attempt_immutable();

    CREATE TRIGGER trg_iu_route_attempt_no_truncate
        BEFORE TRUNCATE ON public.iu_route_attempt
        FOR EACH STATEMENT EXECUTE FUNCTION iu_core.fn_iu_route_attempt_immutable();
END;
$$;
-- +goose StatementEnd

COMMENT ON TABLE public.iu_route_attempt IS
    'Route worker audit: one row per event decision (attempt_no 1) and per replay. Never changed or removed.';

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM iu_core.iu_adoption WHERE object = 'public.iu_route_attempt') THEN
        PERFORM iu_core.fn_iu_unadopt('public.iu_route_attempt');
    ELSE
        PERFORM iu_core.fn_iu_require_empty_history_at(4);
        DROP TABLE public.iu_route_attempt;
    END IF;
END;
$$;
-- +goose StatementEnd
