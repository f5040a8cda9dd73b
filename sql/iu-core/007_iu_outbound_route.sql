-- 007_iu_outbound_route.sql
--
-- the routing table: one route per (event_domain, event_type, event_stream).
-- New routes are disabled and dry-run by default, so adding a route never delivers.
-- route_key appears inside idempotency keys (iu_wrk:{worker}:{route_key}:{event_id}). It may
-- not be 'none' (the placeholder for "no route"); any other text is fine: worker names carry
-- no ':' and the event id is fixed-length and last, so the key stays unambiguous.
--
-- A table migration: from the first release on it is never edited again. The first
-- generation's routes are adopted in place (iu_core.fn_iu_adopt_outbound_route; its uuid id
-- stays: the package never reads a route's id).

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    IF to_regclass('public.iu_outbound_route') IS NOT NULL THEN
        PERFORM iu_core.fn_iu_adopt_outbound_route();
        RETURN;
    END IF;
    CREATE TABLE public.iu_outbound_route (
        id           bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        event_domain text        NOT NULL,
        event_type   text        NOT NULL,
        event_stream text        NOT NULL,
        -- Non-blank, not the 'none' placeholder, and bounded like every name the package
        -- indexes (200 bytes): it is part of every idempotency key of its events.
        route_key    text        NOT NULL UNIQUE
                     CHECK (NOT iu_core.fn_iu_is_blank(route_key) AND route_key <> 'none' AND octet_length(route_key) <= 200),
        route_kind   text        NOT NULL DEFAULT 'outbound',
        enabled      boolean     NOT NULL DEFAULT false,
        dry_run      boolean     NOT NULL DEFAULT true,
        description  text        NOT NULL DEFAULT '',
        created_at   timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT iu_outbound_route_match_uq UNIQUE (event_domain, event_type, event_stream)
    );
END;
$$;
-- +goose StatementEnd

COMMENT ON TABLE public.iu_outbound_route IS
    'Route per (domain, type, stream). enabled=false -> disabled attempt; enabled+dry_run -> dry_run attempt; enabled+not dry_run -> delivery seam (fails closed).';

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM iu_core.iu_adoption WHERE object = 'public.iu_outbound_route') THEN
        PERFORM iu_core.fn_iu_unadopt('public.iu_outbound_route');
    ELSE
        PERFORM iu_core.fn_iu_require_empty_history_at(7);
        DROP TABLE public.iu_outbound_route;
    END IF;
END;
$$;
-- +goose StatementEnd
