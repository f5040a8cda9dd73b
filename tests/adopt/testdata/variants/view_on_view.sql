-- variant: view_on_view
-- models:  a second reporting layer: a view over the legacy reporting view
--          v_event_outbox_daily (alerts per week), and a view over the legacy worker's
--          status view that a dashboard reads.
-- adoption: ADOPT.
-- why:     views are how people read the log; they must keep working and keep seeing every
--          row. Hazards the plan must handle: ALTER COLUMN TYPE on a column a view reads is
--          refused by PostgreSQL ("cannot alter type of a column used by a view or rule"),
--          so changing event_outbox's column types means dropping and recreating the whole
--          chain in dependency order; and renaming event_outbox (013's conversion) silently
--          re-points every dependent view at the renamed table, so after the conversion
--          they would read only the old partition. v_iu_route_worker_status is a legacy
--          name the package reuses for a different view: replacing it means dropping it, and
--          this variant's dashboard view depends on it.
-- check:   SELECT count(*) = 2 FROM pg_views WHERE viewname IN ('v_event_outbox_weekly_alerts', 'v_ops_worker_dashboard')
CREATE VIEW v_event_outbox_weekly_alerts AS
SELECT date_trunc('week', d.day) AS week, d.event_severity, sum(d.events) AS events
  FROM v_event_outbox_daily d
 WHERE d.event_domain = 'system' AND d.event_type = 'alert'
 GROUP BY 1, 2;

CREATE VIEW v_ops_worker_dashboard AS
SELECT s.worker_name, s.last_run_at, now() - s.last_run_at AS silent_for, s.backlog, s.open_dead_letters
  FROM v_iu_route_worker_status s;

GRANT SELECT ON v_event_outbox_weekly_alerts, v_ops_worker_dashboard TO workflow_admin;
