-- variant: refuse_attempt_duplicate_keys
-- models:  an iu_route_attempt whose UNIQUE (idempotency_key, attempt_no) was dropped (a
--          DBA dropped it "temporarily" during a bulk backfill and never put it back), and the
--          duplicates that a cursor reset then wrote: 20 events of iu_outbound_default audited
--          twice with attempt_no 1.
-- adoption: REFUSE.
-- why:     the package's guard against duplicate attempts is that unique key; it cannot be
--          rebuilt over rows that break it, and the audit log is never changed or removed
--          (spec §2), so adoption may not delete the duplicates itself. Refuse, with the
--          count of duplicated keys and the query that lists them.
-- check:   SELECT count(*) = 20 FROM (SELECT idempotency_key FROM iu_route_attempt GROUP BY idempotency_key, attempt_no HAVING count(*) > 1) d
ALTER TABLE iu_route_attempt DROP CONSTRAINT iu_route_attempt_idempotency_key_attempt_no_key;
INSERT INTO iu_route_attempt (event_ref, route_kind, status, idempotency_key, attempt_no, detail, error, created_at)
SELECT a.event_ref, a.route_kind, a.status, a.idempotency_key, a.attempt_no, a.detail || '{"rescan": true}', a.error,
       a.created_at + interval '2 days'
  FROM iu_route_attempt a
 WHERE a.attempt_no = 1 AND a.status <> 'failed'
 ORDER BY a.created_at DESC
 LIMIT 20;
