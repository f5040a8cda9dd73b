-- variant: fk_to_outbox
-- models:  a user table that references events by id with a FOREIGN KEY: the cut
--          pipeline's publication ledger records which event announced each publication.
-- adoption: REFUSE (under the package's partitioned layout, migration 013).
-- why:     a foreign key needs a unique key on exactly event_outbox(id). The package
--          partitions event_outbox by txid, and a partitioned table's keys must contain the
--          partition key, so no FK can reference the partitioned event_outbox by id. Renaming
--          the old table keeps the FK pointing at the old (legacy) table: PostgreSQL refuses
--          to attach a table referenced by a foreign key as a partition, and if it did, every
--          new ledger row for a new event would fail the FK. The plan must name the FK and
--          the fix (drop it, or replace it by a trigger check) instead of adopting silently.
-- check:   SELECT EXISTS (SELECT 1 FROM pg_constraint WHERE contype = 'f' AND confrelid = 'event_outbox'::regclass)
CREATE TABLE cut_publication_ledger (
    id            bigserial   PRIMARY KEY,
    unit_id       text        NOT NULL,
    version       integer     NOT NULL,
    event_id      uuid        NOT NULL REFERENCES event_outbox (id),
    published_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (unit_id, version)
);
INSERT INTO cut_publication_ledger (unit_id, version, event_id, published_at)
SELECT e.safe_payload ->> 'unit_id', (e.safe_payload ->> 'version')::integer, e.id, e.created_at
  FROM (SELECT DISTINCT ON (safe_payload ->> 'unit_id', safe_payload ->> 'version') *
          FROM event_outbox
         WHERE event_domain = 'iu' AND event_type = 'unit_version_published'
         ORDER BY safe_payload ->> 'unit_id', safe_payload ->> 'version', created_at) e;
