-- 005_event_type_registry.sql
--
-- the vocabulary of events: fn_iu_emit_event refuses a (domain, type) that is not
-- registered here. Seeded with the two alert types the stale-check emits.
--
-- A registered domain and type are names by the package's name rule (not blank, at most 200
-- bytes: fn_iu_require_name's rule), so a registration is also the proof that both are
-- valid names: fn_iu_emit_event's accepting path reads the registration and does not test
-- them again (it explains a refusal with the full rule when no registration matches).
--
-- A table migration: from the first release on it is never edited again.

-- +goose Up
CREATE TABLE public.event_type_registry (
    event_domain  text        NOT NULL CONSTRAINT event_type_registry_domain_is_name
                                  CHECK (NOT iu_core.fn_iu_is_blank(event_domain) AND octet_length(event_domain) <= 200),
    event_type    text        NOT NULL CONSTRAINT event_type_registry_type_is_name
                                  CHECK (NOT iu_core.fn_iu_is_blank(event_type) AND octet_length(event_type) <= 200),
    description   text        NOT NULL DEFAULT '',
    registered_at timestamptz NOT NULL DEFAULT now(),
    registered_by text        NOT NULL DEFAULT current_user,
    PRIMARY KEY (event_domain, event_type)
);

INSERT INTO public.event_type_registry (event_domain, event_type, description) VALUES
    ('system', 'queue_worker_silent',    'An executor stopped beating past its stale threshold (fn_queue_stale_check).'),
    ('system', 'queue_worker_recovered', 'An executor that was alerted as silent beats again (fn_queue_stale_check).');

-- +goose Down
DROP TABLE public.event_type_registry;
