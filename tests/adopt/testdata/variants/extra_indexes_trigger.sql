-- variant: extra_indexes_trigger
-- models:  what operators add to a busy shared log: indexes for their own queries (subject
--          look-ups, a partial index on the alerts people page on, an expression index into
--          the payload) and a user trigger: an AFTER INSERT row trigger that copies every
--          critical system alert into an on-call inbox table of their own.
-- adoption: ADOPT.
-- why:     none of it touches the package's columns' meaning. Adoption must keep every
--          index and the trigger working for new rows. Beware: a conversion of event_outbox
--          into a partitioned table (013 renames the old table and attaches it as a
--          partition) leaves these indexes on the old partition only (new partitions lack
--          them) and moves triggers by definition text; the user trigger function must still
--          fire for rows inserted through the parent.
-- check:   SELECT count(*) = 3 FROM pg_indexes WHERE tablename = 'event_outbox' AND indexname LIKE 'ops\_%' AND EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'trg_ops_alert_inbox')
CREATE INDEX ops_event_outbox_subject_idx ON event_outbox (event_subject_table, event_subject_ref);
CREATE INDEX ops_event_outbox_alerts_idx ON event_outbox (created_at)
    WHERE event_domain = 'system' AND event_severity IN ('warning', 'critical');
CREATE INDEX ops_event_outbox_unit_idx ON event_outbox ((safe_payload ->> 'unit_id'))
    WHERE event_domain = 'iu';

CREATE TABLE ops_alert_inbox (
    id          bigserial   PRIMARY KEY,
    event_id    uuid        NOT NULL,
    stream      text        NOT NULL,
    payload     jsonb       NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    acked_at    timestamptz
);

CREATE FUNCTION ops_alert_inbox_copy()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    INSERT INTO ops_alert_inbox (event_id, stream, payload) VALUES (NEW.id, NEW.event_stream, NEW.safe_payload);
    RETURN NULL;
END;
$$;

CREATE TRIGGER trg_ops_alert_inbox
    AFTER INSERT ON event_outbox
    FOR EACH ROW
    WHEN (NEW.event_domain = 'system' AND NEW.event_severity = 'critical')
    EXECUTE FUNCTION ops_alert_inbox_copy();
