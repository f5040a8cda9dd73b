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
-- A table migration: from the first release on it is never edited again. The first
-- generation's registry is adopted in place (iu_core.fn_iu_adopt_registry).

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    IF to_regclass('public.event_type_registry') IS NOT NULL THEN
        PERFORM iu_core.fn_iu_adopt_registry();
        RETURN;
    END IF;
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
END;
$$;
-- +goose StatementEnd

INSERT INTO public.event_type_registry (event_domain, event_type, description) VALUES
    ('system', 'queue_worker_silent',    'An executor stopped beating past its stale threshold (fn_queue_stale_check).'),
    ('system', 'queue_worker_recovered', 'An executor that was alerted as silent beats again (fn_queue_stale_check).')
ON CONFLICT (event_domain, event_type) DO NOTHING;

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM iu_core.iu_adoption WHERE object = 'public.event_type_registry') THEN
        DELETE FROM public.event_type_registry
         WHERE (event_domain, event_type) IN (('system', 'queue_worker_silent'), ('system', 'queue_worker_recovered'))
           AND NOT EXISTS (SELECT 1 FROM iu_core.iu_adoption a WHERE a.kind = 'registry_had_alert_types');
        PERFORM iu_core.fn_iu_unadopt('public.event_type_registry');
    ELSE
        PERFORM iu_core.fn_iu_require_empty_history_at(5);
        DROP TABLE public.event_type_registry;
    END IF;
END;
$$;
-- +goose StatementEnd
