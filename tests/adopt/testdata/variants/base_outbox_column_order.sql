-- variant: base_outbox_column_order (a BASE variant: it replaces legacy.sql's CREATE TABLE
--          event_outbox; load it with psql -v outbox_ddl=<this file> -f legacy.sql)
-- models:  an event_outbox whose columns are in another physical order, as a database gets
--          when its table grew through several migrations: created_at second, the stream
--          before the type, the payload before the subject, lane/severity/occurred_at added
--          later (at the end), and a hole where a delivered_at column was added and dropped
--          again (the route-worker seed: "It has no delivery-state columns — no delivered_at,
--          no processed_at"; pg_attribute keeps the dropped column, attisdropped).
-- adoption: ADOPT.
-- why:     the same columns, types, defaults and constraint names; only attnum differs.
--          Nothing may depend on column position: every INSERT the package and the legacy
--          producers write names its columns, and a conversion that builds a new table
--          (LIKE, INSERT ... SELECT *) must map by name, never by position (SELECT * from
--          this table into one created in the package's order would put created_at into
--          event_domain).
-- check:   SELECT (SELECT attnum FROM pg_attribute WHERE attrelid = 'event_outbox'::regclass AND attname = 'created_at') = 2 AND EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'event_outbox'::regclass AND attisdropped)
CREATE TABLE event_outbox (
    id                  uuid        NOT NULL DEFAULT gen_random_uuid(),
    created_at          timestamptz NOT NULL DEFAULT now(),
    event_domain        text        NOT NULL,
    event_stream        text        NOT NULL,
    event_type          text        NOT NULL,
    safe_payload        jsonb       NOT NULL DEFAULT '{}'::jsonb,
    delivered_at        timestamptz,
    event_subject_table text,
    event_subject_ref   text,
    CONSTRAINT event_outbox_safe_payload_hygiene CHECK (
        NOT safe_payload ?| ARRAY['body','content','raw','vector','embedding','secret','token','password','ssn','personal_data'])
);
ALTER TABLE event_outbox ADD COLUMN delivery_lane text NOT NULL DEFAULT 'standard'
    CHECK (delivery_lane IN ('immediate', 'standard', 'batch'));
ALTER TABLE event_outbox ADD COLUMN event_severity text NOT NULL DEFAULT 'info'
    CHECK (event_severity IN ('debug', 'info', 'warning', 'critical'));
ALTER TABLE event_outbox ADD COLUMN occurred_at timestamptz NOT NULL DEFAULT now();
ALTER TABLE event_outbox DROP COLUMN delivered_at;
