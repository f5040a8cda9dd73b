CREATE OR REPLACE VIEW public.v_queue_health AS
WITH cfg AS MATERIALIZED (
    -- The one floor parser (fn_queue_heartbeat_floor_seconds), evaluated once per query
    -- (MATERIALIZED: not pulled up into a call per heartbeat row).
    SELECT iu_core.fn_queue_heartbeat_floor_seconds() AS floor_seconds
)
SELECT 'cursor'::text                                            AS source,
       c.worker_name                                             AS subject,
       c.event_domain                                            AS domain,
       c.last_seen_at                                            AS last_seen_at,
       floor(extract(epoch FROM (now() - c.last_seen_at)))::bigint AS age_seconds,
       c.events_seen                                             AS events_seen,
       c.attempts_written                                        AS attempts_written,
       c.dead_lettered                                           AS dead_lettered,
       -- gated: a closed gate keeps events waiting (detail.gated_waiting_seconds: how long)
       CASE WHEN c.gated_waiting_since IS NOT NULL THEN 'gated'
            WHEN c.last_seen_at IS NULL THEN 'never_run'
            WHEN c.backlog > 0 THEN 'backlog'
            ELSE 'caught_up' END                                 AS status_hint,
       c.backlog                                                 AS backlog,
       -- never negative: an event committed after this statement's now() (a reader in an
       -- open transaction, or one that commits between now() and the snapshot) is age 0
       CASE WHEN c.backlog > 0 THEN floor(extract(epoch FROM (greatest(now(), c.oldest_pending_created_at) - c.oldest_pending_created_at)))::bigint END
                                                                 AS oldest_pending_age_seconds,
       NULL::text                                                AS severity,
       NULL::boolean                                             AS paused,
       NULL::numeric                                             AS gap_ratio,
       NULL::integer                                             AS stale_threshold_seconds,
       NULL::text                                                AS executor_kind,
       jsonb_build_object('runs_total', c.runs_total, 'last_event_id', c.last_event_id,
                          'last_created_at', c.last_created_at, 'last_run_summary', c.last_run_summary,
                          'gates_open', c.gates_open, 'backlog_capped', c.backlog_capped,
                          'gated_waiting_since', c.gated_waiting_since,
                          'gated_waiting_seconds', floor(extract(epoch FROM (now() - c.gated_waiting_since)))::bigint,
                          'lock_held_by', c.lock_held_by)
                                                                 AS detail
  FROM public.v_iu_route_worker_status c
UNION ALL
-- Route-worker groups: one row per group, the one logical worker its members make (each
-- member has its cursor row above and its heartbeat row below). status_hint rebalancing
-- (a hand-over is pending: detail.waiting_on names the members not at the boundary yet),
-- orphaned (a member's own runner silent past the group's takeover_seconds: the others
-- route its buckets, its heartbeat row goes stale), never_run, backlog (the slowest
-- member's: each position moves over every event of the domain) or caught_up.
-- fn_iu_route_group_health tells the whole group.
SELECT 'route_group'::text,
       g.group_name,
       g.event_domain,
       max(s.last_seen_at),
       floor(extract(epoch FROM (now() - max(s.last_seen_at))))::bigint,
       sum(s.events_seen)::bigint,
       sum(s.attempts_written)::bigint,
       sum(s.dead_lettered)::bigint,
       CASE WHEN g.boundary_snapshot IS NOT NULL THEN 'rebalancing'
            WHEN bool_or(o.orphaned) THEN 'orphaned'
            WHEN max(s.last_seen_at) IS NULL THEN 'never_run'
            WHEN max(s.backlog) > 0 THEN 'backlog'
            ELSE 'caught_up' END,
       max(s.backlog),
       max(CASE WHEN s.backlog > 0 THEN floor(extract(epoch FROM (greatest(now(), s.oldest_pending_created_at) - s.oldest_pending_created_at)))::bigint END),
       NULL::text,
       NULL::boolean,
       NULL::numeric,
       NULL::integer,
       NULL::text,
       jsonb_build_object('generation', g.generation, 'members', count(*), 'boundary_at', g.boundary_at,
                          'waiting_on', coalesce(jsonb_agg(s.worker_name ORDER BY s.worker_name) FILTER (WHERE o.behind), '[]'::jsonb),
                          'orphaned', coalesce(jsonb_agg(s.worker_name ORDER BY s.worker_name) FILTER (WHERE o.orphaned), '[]'::jsonb),
                          'takeover_seconds', g.takeover_seconds, 'backlog_capped', bool_or(s.backlog_capped))
  FROM public.iu_route_group g
  JOIN public.iu_route_worker_cursor m ON m.group_name = g.group_name
  JOIN public.v_iu_route_worker_status s ON s.worker_name = m.worker_name
  LEFT JOIN public.queue_heartbeat h ON h.executor_id = s.worker_name
 CROSS JOIN LATERAL (
       SELECT g.boundary_snapshot IS NOT NULL
                AND (s.window_snapshot IS NOT NULL OR s.done_snapshot::text IS DISTINCT FROM g.boundary_snapshot::text) AS behind,
              (h.executor_id IS NULL OR h.paused_at IS NOT NULL
                OR h.last_beat_at < now() - make_interval(secs => g.takeover_seconds)) AS orphaned
 ) o
 GROUP BY g.group_name
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
            WHEN iu_core.fn_queue_heartbeat_is_stale(h.last_beat_at, h.stale_threshold_seconds, cfg.floor_seconds, now()) THEN 'stale'
            ELSE 'fresh' END,
       NULL::bigint,
       NULL::bigint,
       -- same rule as fn_queue_stale_check: decided on the reported (truncated) gap_ratio;
       -- an executor that beats on time but reports status error (the runner does after
       -- three failed passes; any executor may say so) is fresh and still a problem: warning
       CASE WHEN h.paused_at IS NULL
             AND iu_core.fn_queue_heartbeat_is_stale(h.last_beat_at, h.stale_threshold_seconds, cfg.floor_seconds, now())
            THEN iu_core.fn_queue_heartbeat_severity(g.gap_ratio)
            WHEN h.paused_at IS NULL AND h.status = 'error' THEN 'warning' END,
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
                               -- how long it has been paused, by the database's clock (iu-runner
                               -- health --paused-grace: a pause left behind hides a dead executor)
                               'paused_seconds', floor(extract(epoch FROM (greatest(now(), h.paused_at) - h.paused_at)))::bigint,
                               'silent_since', sa.silent_since, 'alerted_at', sa.alerted_at,
                               'alerted_severity', sa.alerted_severity) END
  FROM public.queue_heartbeat h
  LEFT JOIN public.queue_stale_alert sa ON sa.executor_id = h.executor_id
 CROSS JOIN cfg
 CROSS JOIN LATERAL (
       SELECT floor(extract(epoch FROM (now() - h.last_beat_at)))::bigint AS age_seconds,
              iu_core.fn_queue_heartbeat_gap_ratio(h.last_beat_at, h.expected_cadence_seconds, now()) AS gap_ratio
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
       floor(extract(epoch FROM (greatest(now(), min(d.last_failed_at)) - min(d.last_failed_at))))::bigint,
       NULL::text,
       NULL::boolean,
       NULL::numeric,
       NULL::integer,
       NULL::text,
       NULL::jsonb
  FROM public.iu_route_dead_letter d
 WHERE d.resolved_at IS NULL
 GROUP BY d.event_domain
UNION ALL
SELECT 'dead_letter_job'::text,
       x.job_kind,
       -- one row per job kind, not per dead letter: domain is the kind's domain, or its
       -- distinct domains sorted and comma separated when its open dead letters span
       -- several (the same shape as a heartbeat row's domain_scope); detail.domains has the
       -- count per domain.
       string_agg(x.event_domain, ',' ORDER BY x.event_domain),
       max(x.newest),
       floor(extract(epoch FROM (now() - max(x.newest))))::bigint,
       NULL::bigint,
       NULL::bigint,
       sum(x.n)::bigint,
       'open',
       NULL::bigint,
       floor(extract(epoch FROM (greatest(now(), min(x.oldest)) - min(x.oldest))))::bigint,
       NULL::text,
       NULL::boolean,
       NULL::numeric,
       NULL::integer,
       NULL::text,
       jsonb_build_object('domains', jsonb_object_agg(x.event_domain, x.n))
  FROM (SELECT jd.job_kind, jd.event_domain, count(*) AS n,
               max(jd.last_failed_at) AS newest, min(jd.last_failed_at) AS oldest
          FROM public.job_dead_letter jd
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
       floor(extract(epoch FROM (greatest(now(), min(j.enqueued_at)) - min(j.enqueued_at))))::bigint,
       NULL::text,
       NULL::boolean,
       NULL::numeric,
       NULL::integer,
       NULL::text,
       jsonb_build_object('due_now', count(*) FILTER (WHERE j.process_after <= now()))
  FROM public.job_queue j
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
       (SELECT count(*) FROM public.job_queue q WHERE q.status = 'queued' AND q.job_kind = p.job_kind),
       NULL::bigint,
       NULL::text,
       true,
       NULL::numeric,
       NULL::integer,
       NULL::text,
       jsonb_build_object('paused_reason', p.reason, 'paused_by', p.paused_by)
  FROM public.job_kind_pause p
UNION ALL
-- The history partitions (iu_core.fn_iu_history_health): one row, status_hint ok, lock_held
-- (a session holds the partition-maintenance lock: detail.maintenance_lock_holder names it,
-- age_seconds is how long its transaction has run) or default_rows (backlog: rows in the
-- default partitions, up to 1,000 each).
SELECT 'history'::text,
       'partitions'::text,
       NULL::text,
       NULL::timestamptz,
       (hh.h->>'holder_age_seconds')::bigint,
       NULL::bigint,
       NULL::bigint,
       NULL::bigint,
       hh.h->>'status_hint',
       (hh.h->>'default_rows')::bigint,
       NULL::bigint,
       NULL::text,
       NULL::boolean,
       NULL::numeric,
       NULL::integer,
       NULL::text,
       hh.h->'detail'
  FROM (SELECT iu_core.fn_iu_history_health() AS h) hh;

COMMENT ON VIEW public.v_queue_health IS
    'Single pane: cursor, route_group, heartbeat, dead_letter_event, dead_letter_job, backlog_job_queue, job_kind_paused and history rows. Watch status_hint stale / open / lock_held / default_rows and severity.';
