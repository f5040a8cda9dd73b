-- variant: extra_columns
-- models:  columns a team added to the shared log after the first generation shipped, each
--          nullable or defaulted so the producers' INSERTs did not change: a tenant with a
--          constant default, a trace id with none, a producer name defaulting to the login,
--          and a schema version number. Some producers fill them, most do not.
-- adoption: ADOPT.
-- why:     extra columns break nothing the package does as long as it names its columns
--          (fn_iu_emit_event and the worker do) and a conversion carries them over (013's
--          LIKE copies columns and defaults; current_user is a stable default, not a
--          volatile one). Adoption must keep them and their values, not drop them.
-- check:   SELECT count(*) = 4 FROM information_schema.columns WHERE table_name = 'event_outbox' AND column_name IN ('tenant', 'trace_id', 'producer', 'schema_version')
ALTER TABLE event_outbox ADD COLUMN tenant text DEFAULT 'main';
ALTER TABLE event_outbox ADD COLUMN trace_id uuid;
ALTER TABLE event_outbox ADD COLUMN producer text DEFAULT current_user;
ALTER TABLE event_outbox ADD COLUMN schema_version smallint NOT NULL DEFAULT 1;
-- a producer that fills them
INSERT INTO event_outbox (event_domain, event_type, event_stream, safe_payload, tenant, trace_id, producer, schema_version)
SELECT 'system', 'alert', 'healthcheck', jsonb_build_object('check', 'tenant_probe', 'n', g), 'tenant_b', gen_random_uuid(), 'probe', 2
  FROM generate_series(1, 25) g;
