-- variant: refuse_outbox_partitioned_by_time
-- models:  a DBA partitioned the growing log by month on created_at: event_outbox is a
--          RANGE-partitioned table (PRIMARY KEY (id, created_at), one partition per month,
--          a DEFAULT partition), with the legacy trigger, indexes, views, grants and the
--          delivery seam recreated on it. Every row kept.
-- adoption: REFUSE.
-- why:     the package partitions event_outbox itself, by transaction id (migration 013:
--          the claim, the backlog and retention prune by txid ranges). A table already
--          partitioned by another key cannot be converted in place (a partitioned table
--          cannot be attached as a partition, and re-partitioning moves every row), and its
--          PRIMARY KEY is no longer id alone. Refuse, naming the partition key.
-- check:   SELECT relkind = 'p' FROM pg_class WHERE oid = 'event_outbox'::regclass
DROP FUNCTION fn_iu_route_worker_health(text);
DROP VIEW v_iu_route_worker_status;
DROP VIEW v_event_outbox_daily;
ALTER TABLE event_outbox RENAME TO event_outbox_unpartitioned;
CREATE TABLE event_outbox (LIKE event_outbox_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING COMMENTS)
    PARTITION BY RANGE (created_at);
ALTER TABLE event_outbox ADD CONSTRAINT event_outbox_pkey_id_created PRIMARY KEY (id, created_at);
DO $$
DECLARE
    v_m timestamptz := date_trunc('month', (SELECT min(created_at) FROM event_outbox_unpartitioned));
BEGIN
    WHILE v_m < date_trunc('month', now()) + interval '2 months' LOOP
        EXECUTE format('CREATE TABLE %I PARTITION OF event_outbox FOR VALUES FROM (%L) TO (%L)',
                       'event_outbox_' || to_char(v_m, 'YYYYMM'), v_m, v_m + interval '1 month');
        v_m := v_m + interval '1 month';
    END LOOP;
END;
$$;
CREATE TABLE event_outbox_default PARTITION OF event_outbox DEFAULT;
INSERT INTO event_outbox SELECT * FROM event_outbox_unpartitioned;
DROP TABLE event_outbox_unpartitioned CASCADE;   -- takes fn_iu_route_deliver (its row type) along
CREATE INDEX event_outbox_domain_created_idx ON event_outbox (event_domain, created_at, id);
CREATE TRIGGER trg_event_outbox_append_only
    BEFORE UPDATE OR DELETE ON event_outbox
    FOR EACH ROW EXECUTE FUNCTION fn_event_outbox_append_only();
GRANT INSERT ON event_outbox TO cutter_agent;

CREATE FUNCTION fn_iu_route_deliver(p_event event_outbox, p_route iu_outbound_route)
RETURNS jsonb
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'fn_iu_route_deliver: delivery not built (route %, event %)', p_route.route_key, p_event.id
        USING ERRCODE = 'feature_not_supported';
END;
$$;

CREATE VIEW v_event_outbox_daily AS
SELECT date_trunc('day', e.created_at) AS day, e.event_domain, e.event_type, e.event_severity,
       count(*) AS events, max(e.created_at) AS last_created_at
  FROM event_outbox e
 GROUP BY 1, 2, 3, 4;

CREATE VIEW v_iu_route_worker_status AS
SELECT c.worker_name, c.event_domain, c.last_created_at, c.last_event_id, c.last_run_at, c.runs_total,
       c.events_seen, c.attempts_written, c.dead_lettered,
       fn_iu_core_routes_enabled() AS routes_enabled, fn_iu_route_worker_enabled() AS worker_enabled,
       (SELECT count(*) FROM event_outbox e
         WHERE e.event_domain = c.event_domain
           AND (e.created_at, e.id) > (coalesce(c.last_created_at, '-infinity'::timestamptz),
                                       coalesce(c.last_event_id, '00000000-0000-0000-0000-000000000000'::uuid))) AS backlog,
       (SELECT count(*) FROM iu_route_dead_letter d
         WHERE d.worker_name = c.worker_name AND d.resolved_at IS NULL) AS open_dead_letters
  FROM iu_route_worker_cursor c;
GRANT SELECT ON v_event_outbox_daily, v_iu_route_worker_status TO workflow_admin;
