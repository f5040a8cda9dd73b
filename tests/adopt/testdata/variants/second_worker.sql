-- variant: second_worker
-- models:  a second legacy route worker over the same domain: a shadow consumer registered
--          later (its cursor was seeded 14 days into the log), which stopped a week behind
--          iu_outbound_default, with its own attempts (its own idempotency keys,
--          iu_wrk:iu_outbound_shadow:...) for the events it passed.
-- adoption: ADOPT.
-- why:     each worker is an independent consumer (spec §4.3): adoption maps each cursor
--          separately to "what this worker has not passed"; the attempts of both stay, and
--          neither worker's position may be taken from the other's.
-- check:   SELECT count(*) = 2 FROM iu_route_worker_cursor
INSERT INTO iu_route_worker_cursor (worker_name, event_domain, last_created_at, last_event_id, events_seen,
                                    attempts_written, runs_total, last_run_at, created_at)
SELECT 'iu_outbound_shadow', 'iu', e.created_at, e.id, 0, 0, 0, c.last_run_at - interval '3 days', c.created_at + interval '10 days'
  FROM iu_route_worker_cursor c
 CROSS JOIN LATERAL (SELECT x.created_at, x.id FROM event_outbox x
                      WHERE x.event_domain = 'iu' AND x.created_at <= c.last_created_at - interval '7 days'
                      ORDER BY x.created_at DESC, x.id DESC LIMIT 1) e
 WHERE c.worker_name = 'iu_outbound_default';

INSERT INTO iu_route_attempt (event_ref, route_kind, status, idempotency_key, attempt_no, detail, created_at)
SELECT e.id, r.route_kind,
       CASE WHEN r.route_key IS NULL THEN 'skipped' WHEN NOT r.enabled THEN 'disabled' ELSE 'dry_run' END,
       'iu_wrk:iu_outbound_shadow:' || coalesce(r.route_key, 'none') || ':' || e.id::text, 1,
       jsonb_build_object('worker', 'iu_outbound_shadow', 'route_key', r.route_key,
                          'event_type', e.event_type, 'event_stream', e.event_stream),
       e.created_at + interval '5 minutes'
  FROM event_outbox e
  JOIN iu_route_worker_cursor s ON s.worker_name = 'iu_outbound_shadow'
  LEFT JOIN iu_outbound_route r
         ON r.event_domain = e.event_domain AND r.event_type = e.event_type AND r.event_stream = e.event_stream
 WHERE e.event_domain = 'iu'
   AND e.created_at >= s.last_created_at - interval '14 days'
   AND (e.created_at, e.id) <= (s.last_created_at, s.last_event_id)
 ORDER BY e.created_at, e.id;

UPDATE iu_route_worker_cursor s
   SET events_seen = a.n, attempts_written = a.n, runs_total = a.n / 5 + 1
  FROM (SELECT count(*) AS n FROM iu_route_attempt WHERE idempotency_key LIKE 'iu_wrk:iu_outbound_shadow:%') a
 WHERE s.worker_name = 'iu_outbound_shadow';
