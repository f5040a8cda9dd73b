-- variant: fk_to_attempt
-- models:  a review table of the operators that references audit rows with a FOREIGN KEY
--          to iu_route_attempt(id): each reviewed failed attempt.
-- adoption: REFUSE (under the package's partitioned layout, migration 013).
-- why:     the package partitions iu_route_attempt by event_txid (013); a partitioned
--          table cannot be referenced by id alone, and the old table, renamed and attached
--          as a partition, cannot stay a FK target (PostgreSQL refuses to attach a referenced
--          table, and new attempts would live elsewhere). The legacy id is a bigserial, the
--          package's a GENERATED ALWAYS identity: the review rows' references must stay
--          valid too. The plan must name the FK and refuse.
-- check:   SELECT EXISTS (SELECT 1 FROM pg_constraint WHERE contype = 'f' AND confrelid = 'iu_route_attempt'::regclass)
CREATE TABLE ops_attempt_review (
    id          bigserial   PRIMARY KEY,
    attempt_id  bigint      NOT NULL REFERENCES iu_route_attempt (id),
    reviewer    text        NOT NULL,
    verdict     text        NOT NULL CHECK (verdict IN ('expected', 'bug', 'ignore')),
    reviewed_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO ops_attempt_review (attempt_id, reviewer, verdict)
SELECT a.id, 'ops_oncall', 'expected' FROM iu_route_attempt a WHERE a.status = 'failed';
