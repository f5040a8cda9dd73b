-- 015_queue_health_view.sql
--
-- Adds v_queue_health, the single pane for watchdogs and operators (SELECT: workflow_admin).
--
-- Why: "alive with nothing to do" and "silently dead" must be told apart at a glance, and
-- every queue-like thing of the package (route workers, executors, both dead-letter tables,
-- the job queue) answers in one place with one vocabulary.
--
-- Columns (spec order first): source, subject, domain, last_seen_at, age_seconds,
-- events_seen, attempts_written, dead_lettered, status_hint; then backlog,
-- oldest_pending_age_seconds, severity, paused, gap_ratio, stale_threshold_seconds,
-- executor_kind, detail.
--
-- Rows:
--   cursor             one per route worker, read from v_iu_route_worker_status (009), the one
--                      worker-health computation: its counters, backlog and
--                      oldest_pending_age_seconds (the domain's committed events the worker has
--                      not routed yet). status_hint never_run | backlog | caught_up.
--   heartbeat          one per executor: status_hint stale | fresh | paused (same rule as
--                      fn_queue_stale_check, floor included); severity warning | critical when
--                      stale; events_seen = ticks_total; gap_ratio; executor_kind; detail (status,
--                      pause and the stale-check's alert state from queue_stale_alert) only on rows that are paused, alerted or
--                      report a status other than ok, so 10,000 fresh rows stay cheap.
--   dead_letter_event  open route dead letters aggregated per event domain: count in
--                      dead_lettered, newest failure in last_seen_at, status_hint 'open'.
--   dead_letter_job    open job dead letters aggregated per job kind (one row each, spec 8),
--                      same shape; domain = the kind's domain, or its domains sorted and
--                      comma separated when they span several; detail.domains = count per domain.
--   backlog_job_queue  one per (job kind, domain) with queued jobs: count in events_seen and
--                      backlog, newest enqueue in last_seen_at, oldest in
--                      oldest_pending_age_seconds, due-now count in detail.
--   job_kind_paused    one per paused job kind (claims skip it): status_hint 'paused', paused
--                      true, its queued jobs in backlog, reason and actor in detail.
-- The view calls functions that are granted to workflow_admin (a view's function calls are
-- checked against its reader): those of v_iu_route_worker_status (009) and
-- fn_queue_heartbeat_floor_seconds (010, the one parser of the global floor, SECURITY
-- DEFINER so the reader needs no access to dot_config).
-- stale, gap_ratio and severity of a heartbeat row come from the same assessment functions
-- fn_queue_stale_check uses (010), so the view and the alerts never disagree.

-- +goose Up

CREATE VIEW v_queue_health AS
WITH cfg AS MATERIALIZED (
    -- The one floor parser (010), evaluated once per query (MATERIALIZED: not pulled up
    -- into a call per heartbeat row).
    SELECT fn_queue_heartbeat_floor_seconds() AS floor_seconds
)
SELECT 'cursor'::text                                            AS source,
       c.worker_name                                             AS subject,
       c.event_domain                                            AS domain,
       c.last_seen_at                                            AS last_seen_at,
       floor(extract(epoch FROM (now() - c.last_seen_at)))::bigint AS age_seconds,
       c.events_seen                                             AS events_seen,
       c.attempts_written                                        AS attempts_written,
       c.dead_lettered                                           AS dead_lettered,
       CASE WHEN c.last_seen_at IS NULL THEN 'never_run'
            WHEN c.backlog > 0 THEN 'backlog'
            ELSE 'caught_up' END                                 AS status_hint,
       c.backlog                                                 AS backlog,
       CASE WHEN c.backlog > 0 THEN floor(extract(epoch FROM (now() - c.oldest_pending_created_at)))::bigint END
                                                                 AS oldest_pending_age_seconds,
       NULL::text                                                AS severity,
       NULL::boolean                                             AS paused,
       NULL::numeric                                             AS gap_ratio,
       NULL::integer                                             AS stale_threshold_seconds,
       NULL::text                                                AS executor_kind,
       jsonb_build_object('runs_total', c.runs_total, 'last_event_id', c.last_event_id,
                          'last_created_at', c.last_created_at, 'last_run_summary', c.last_run_summary)
                                                                 AS detail
  FROM v_iu_route_worker_status c
UNION ALL
SELECT 'heartbeat'::text,
       h.executor_id,
       nullif(array_to_string(h.domain_scope, ','), ''),
       h.last_beat_at,
       g.age_seconds,
       h.ticks_total,
       NULL::bigint,
       NULL::bigint,
       CASE WHEN h.paused_at IS NOT NULL THEN 'paused'
            WHEN fn_queue_heartbeat_is_stale(h.last_beat_at, h.stale_threshold_seconds, cfg.floor_seconds, now()) THEN 'stale'
            ELSE 'fresh' END,
       NULL::bigint,
       NULL::bigint,
       -- same rule as fn_queue_stale_check: decided on the reported (truncated) gap_ratio
       CASE WHEN h.paused_at IS NULL
             AND fn_queue_heartbeat_is_stale(h.last_beat_at, h.stale_threshold_seconds, cfg.floor_seconds, now())
            THEN fn_queue_heartbeat_severity(g.gap_ratio) END,
       h.paused_at IS NOT NULL,
       g.gap_ratio,
       greatest(h.stale_threshold_seconds, cfg.floor_seconds),
       h.executor_kind,
       -- only rows that need explaining carry a detail document (cheap on 10,000 fresh rows)
       CASE WHEN h.paused_at IS NOT NULL OR sa.alerted_at IS NOT NULL OR h.status <> 'ok' THEN
            jsonb_build_object('status', h.status,
                               'expected_cadence_seconds', h.expected_cadence_seconds,
                               'own_stale_threshold_seconds', h.stale_threshold_seconds,
                               'paused_at', h.paused_at, 'paused_reason', h.paused_reason, 'paused_by', h.paused_by,
                               'silent_since', sa.silent_since, 'alerted_at', sa.alerted_at,
                               'alerted_severity', sa.alerted_severity) END
  FROM queue_heartbeat h
  LEFT JOIN queue_stale_alert sa ON sa.executor_id = h.executor_id
 CROSS JOIN cfg
 CROSS JOIN LATERAL (
       SELECT floor(extract(epoch FROM (now() - h.last_beat_at)))::bigint AS age_seconds,
              fn_queue_heartbeat_gap_ratio(h.last_beat_at, h.expected_cadence_seconds, now()) AS gap_ratio
 ) g
UNION ALL
SELECT 'dead_letter_event'::text,
       d.event_domain,
       d.event_domain,
       max(d.last_failed_at),
       floor(extract(epoch FROM (now() - max(d.last_failed_at))))::bigint,
       NULL::bigint,
       NULL::bigint,
       count(*),
       'open',
       NULL::bigint,
       floor(extract(epoch FROM (now() - min(d.last_failed_at))))::bigint,
       NULL::text,
       NULL::boolean,
       NULL::numeric,
       NULL::integer,
       NULL::text,
       NULL::jsonb
  FROM iu_route_dead_letter d
 WHERE d.resolved_at IS NULL
 GROUP BY d.event_domain
UNION ALL
SELECT 'dead_letter_job'::text,
       x.job_kind,
       -- one row per job kind (spec 8): domain is the kind's domain, or its distinct domains
       -- sorted and comma separated when its open dead letters span several (the same
       -- shape as a heartbeat row's domain_scope); detail.domains has the count per domain.
       string_agg(x.event_domain, ',' ORDER BY x.event_domain),
       max(x.newest),
       floor(extract(epoch FROM (now() - max(x.newest))))::bigint,
       NULL::bigint,
       NULL::bigint,
       sum(x.n)::bigint,
       'open',
       NULL::bigint,
       floor(extract(epoch FROM (now() - min(x.oldest))))::bigint,
       NULL::text,
       NULL::boolean,
       NULL::numeric,
       NULL::integer,
       NULL::text,
       jsonb_build_object('domains', jsonb_object_agg(x.event_domain, x.n))
  FROM (SELECT jd.job_kind, jd.event_domain, count(*) AS n,
               max(jd.last_failed_at) AS newest, min(jd.last_failed_at) AS oldest
          FROM job_dead_letter jd
         WHERE jd.resolved_at IS NULL
         GROUP BY jd.job_kind, jd.event_domain) x
 GROUP BY x.job_kind
UNION ALL
SELECT 'backlog_job_queue'::text,
       j.job_kind,
       j.event_domain,
       max(j.enqueued_at),
       floor(extract(epoch FROM (now() - max(j.enqueued_at))))::bigint,
       count(*),
       NULL::bigint,
       NULL::bigint,
       'queued',
       count(*),
       floor(extract(epoch FROM (now() - min(j.enqueued_at))))::bigint,
       NULL::text,
       NULL::boolean,
       NULL::numeric,
       NULL::integer,
       NULL::text,
       jsonb_build_object('due_now', count(*) FILTER (WHERE j.process_after <= now()))
  FROM job_queue j
 WHERE j.status = 'queued'
 GROUP BY j.job_kind, j.event_domain
UNION ALL
SELECT 'job_kind_paused'::text,
       p.job_kind,
       NULL::text,
       p.paused_at,
       floor(extract(epoch FROM (now() - p.paused_at)))::bigint,
       NULL::bigint,
       NULL::bigint,
       NULL::bigint,
       'paused',
       (SELECT count(*) FROM job_queue q WHERE q.status = 'queued' AND q.job_kind = p.job_kind),
       NULL::bigint,
       NULL::text,
       true,
       NULL::numeric,
       NULL::integer,
       NULL::text,
       jsonb_build_object('paused_reason', p.reason, 'paused_by', p.paused_by)
  FROM job_kind_pause p;

COMMENT ON VIEW v_queue_health IS
    'Single pane: cursor, heartbeat, dead_letter_event, dead_letter_job, backlog_job_queue and job_kind_paused rows. Watch status_hint stale / open and severity.';

REVOKE ALL ON v_queue_health FROM PUBLIC;
GRANT SELECT ON v_queue_health TO workflow_admin;

-- +goose Down
DROP VIEW v_queue_health;
