-- 003_event_type_registry.sql
--
-- Adds the vocabulary of events: fn_iu_emit_event refuses a (domain, type) that is not
-- registered here. Seeded with the two alert types the stale-check emits.

-- +goose Up
CREATE TABLE event_type_registry (
    event_domain  text        NOT NULL CHECK (event_domain <> ''),
    event_type    text        NOT NULL CHECK (event_type <> ''),
    description   text        NOT NULL DEFAULT '',
    registered_at timestamptz NOT NULL DEFAULT now(),
    registered_by text        NOT NULL DEFAULT current_user,
    PRIMARY KEY (event_domain, event_type)
);

INSERT INTO event_type_registry (event_domain, event_type, description) VALUES
    ('system', 'queue_worker_silent',    'An executor stopped beating past its stale threshold (fn_queue_stale_check).'),
    ('system', 'queue_worker_recovered', 'An executor that was alerted as silent beats again (fn_queue_stale_check).');

-- +goose Down
DROP TABLE event_type_registry;
