-- 014_queue_notify_bridge.sql
--
-- Adds the opt-in LISTEN/NOTIFY wake-up bridge:
--   fn_queue_notify_enabled()   reads dot_config queue.notify.bridge_enabled (seeded 'false';
--                               fail-closed: only the exact value 'true' opens it)
--   AFTER INSERT statement triggers on event_outbox and job_queue that call
--   pg_notify('queue_wake_' || domain, payload).
--
-- Why: listeners wake at once instead of waiting for the next poll. NOTIFY is only a signal:
-- PostgreSQL stays the source of truth and a missed notification loses nothing (the poll
-- catches it). Payloads carry references, never a body.
--
-- Payloads. A statement that inserts one row of a domain sends the seed's payload:
--   event: {"layer": "event", "event_id", "event_domain", "event_type", "lane", "occurred_at"}
--   job:   {"layer": "job", "job_id", "job_kind", "process_after"}
-- A statement that inserts several rows of a domain sends ONE notification for that domain,
-- coalesced, with a count (a bulk insert must not pay for 10,000 notifications):
--   event: {"layer": "event", "event_domain", "count", "first_event_id", "last_event_id", "lanes"}
--   job:   {"layer": "job", "event_domain", "count", "first_job_id", "last_job_id", "job_kinds"}
-- (first/last in the statement's insertion order.) The triggers are statement-level with a
-- transition table (REFERENCING NEW TABLE).
--
-- The bridge can never make an insert fail:
--   * a domain whose channel name would exceed PostgreSQL's 63-byte identifier limit is not
--     signalled (the poll still finds its rows);
--   * pg_notify refuses payloads of 8000 bytes or more, so a payload over 7900 bytes (a very
--     long event_type or job_kind) is sent reduced: layer, ids, domain, lane/process_after
--     kept, the long field cut to its first 200 characters (job_kinds of a coalesced job
--     signal likewise, or dropped), plus "truncated": true. Listeners read the rows from
--     the tables anyway: the signal is only a wake-up.

-- +goose Up

INSERT INTO dot_config (key, value, description) VALUES
    ('queue.notify.bridge_enabled', 'false',
     'NOTIFY wake-up bridge on event_outbox and job_queue inserts (channel queue_wake_<domain>). Only ''true'' opens it.')
ON CONFLICT (key) DO NOTHING;

-- Starts with the writable-schema guard (fn_iu_require_trusted_search_path, 001); AND is
-- evaluated left to right here, so a refusal comes first.
-- +goose StatementBegin
CREATE FUNCTION fn_queue_notify_enabled()
RETURNS boolean
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    SELECT fn_iu_require_trusted_search_path('fn_queue_notify_enabled') AND coalesce((SELECT c.value = 'true' FROM dot_config c WHERE c.key = 'queue.notify.bridge_enabled'), false)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_queue_wake_notify_event_outbox()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    r record;
    e record;
    v_payload text;
BEGIN
    -- The enabled test (itself guarded) comes first so a disabled bridge costs one call per
    -- statement; nothing before the guard can resolve to a planted overload.
    IF NOT fn_queue_notify_enabled() THEN
        RETURN NULL;
    END IF;
    PERFORM fn_iu_require_trusted_search_path(TG_NAME);
    -- One pass over the statement's rows: cheap aggregates only (no sorts, no collations).
    FOR r IN
        SELECT n.event_domain,
               count(*)                    AS cnt,
               (array_agg(n.id))[1]        AS first_id,
               (array_agg(n.id))[count(*)] AS last_id,
               bool_or(n.delivery_lane = 'immediate') AS has_immediate,
               bool_or(n.delivery_lane = 'standard')  AS has_standard,
               bool_or(n.delivery_lane = 'batch')     AS has_batch
          FROM new_rows n
         WHERE octet_length(n.event_domain) <= 52   -- 'queue_wake_' + domain <= 63 bytes
         GROUP BY n.event_domain
    LOOP
        IF r.cnt = 1 THEN
            SELECT n.event_type, n.delivery_lane, n.occurred_at INTO e FROM new_rows n WHERE n.id = r.first_id;
            v_payload := jsonb_build_object('layer', 'event', 'event_id', r.first_id, 'event_domain', r.event_domain,
                                            'event_type', e.event_type, 'lane', e.delivery_lane,
                                            'occurred_at', e.occurred_at)::text;
            IF octet_length(v_payload) > 7900 THEN
                -- pg_notify refuses payloads of 8000 bytes or more: the long field is cut to
                -- 200 characters and the signal says so (the row itself is read from the table).
                v_payload := jsonb_build_object('layer', 'event', 'event_id', r.first_id, 'event_domain', r.event_domain,
                                                'event_type', left(e.event_type, 200), 'lane', e.delivery_lane,
                                                'occurred_at', e.occurred_at, 'truncated', true)::text;
            END IF;
        ELSE
            -- bounded: ids, a domain of <= 52 bytes and at most three lanes
            v_payload := jsonb_build_object('layer', 'event', 'event_domain', r.event_domain, 'count', r.cnt,
                                            'first_event_id', r.first_id, 'last_event_id', r.last_id,
                                            'lanes', to_jsonb(array_remove(ARRAY[
                                                 CASE WHEN r.has_immediate THEN 'immediate' END,
                                                 CASE WHEN r.has_standard THEN 'standard' END,
                                                 CASE WHEN r.has_batch THEN 'batch' END], NULL)))::text;
        END IF;
        PERFORM pg_notify('queue_wake_' || r.event_domain, v_payload);
    END LOOP;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_queue_wake_notify_job_queue()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    r         record;
    v_payload text;
BEGIN
    -- The enabled test (itself guarded) comes first so a disabled bridge costs one call per
    -- statement; nothing before the guard can resolve to a planted overload.
    IF NOT fn_queue_notify_enabled() THEN
        RETURN NULL;
    END IF;
    PERFORM fn_iu_require_trusted_search_path(TG_NAME);
    FOR r IN
        SELECT n.event_domain,
               count(*)                        AS cnt,
               (array_agg(n.job_id))[1]        AS first_id,
               (array_agg(n.job_id))[count(*)] AS last_id,
               min(n.job_kind)                 AS job_kind,
               array_agg(DISTINCT n.job_kind)  AS job_kinds,
               min(n.process_after)            AS process_after
          FROM new_rows n
         WHERE octet_length(n.event_domain) <= 52
         GROUP BY n.event_domain
    LOOP
        IF r.cnt = 1 THEN
            v_payload := jsonb_build_object('layer', 'job', 'job_id', r.first_id, 'job_kind', r.job_kind,
                                            'process_after', r.process_after)::text;
            IF octet_length(v_payload) > 7900 THEN
                -- pg_notify refuses payloads of 8000 bytes or more: cut the long field
                v_payload := jsonb_build_object('layer', 'job', 'job_id', r.first_id, 'event_domain', r.event_domain,
                                                'job_kind', left(r.job_kind, 200),
                                                'process_after', r.process_after, 'truncated', true)::text;
            END IF;
        ELSE
            v_payload := jsonb_build_object('layer', 'job', 'event_domain', r.event_domain, 'count', r.cnt,
                                            'first_job_id', r.first_id, 'last_job_id', r.last_id,
                                            'job_kinds', to_jsonb(r.job_kinds[1:20]),
                                            'first_process_after', r.process_after)::text;
            IF octet_length(v_payload) > 7900 THEN
                -- long kinds: name each by its first 200 characters (still <= 20 of them)
                v_payload := jsonb_build_object('layer', 'job', 'event_domain', r.event_domain, 'count', r.cnt,
                                                'first_job_id', r.first_id, 'last_job_id', r.last_id,
                                                'job_kinds', (SELECT coalesce(jsonb_agg(left(k, 200)), '[]'::jsonb)
                                                                FROM unnest(r.job_kinds[1:20]) AS k),
                                                'first_process_after', r.process_after, 'truncated', true)::text;
                IF octet_length(v_payload) > 7900 THEN   -- multibyte kinds: drop the list
                    v_payload := (v_payload::jsonb - 'job_kinds')::text;
                END IF;
            END IF;
        END IF;
        PERFORM pg_notify('queue_wake_' || r.event_domain, v_payload);
    END LOOP;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER trg_event_outbox_wake_notify
    AFTER INSERT ON event_outbox
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION fn_queue_wake_notify_event_outbox();

CREATE TRIGGER trg_job_queue_wake_notify
    AFTER INSERT ON job_queue
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION fn_queue_wake_notify_job_queue();

REVOKE ALL ON FUNCTION fn_queue_notify_enabled() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_wake_notify_event_outbox() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_wake_notify_job_queue() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fn_queue_notify_enabled() TO workflow_admin, dot_executor;

-- +goose Down
DROP TRIGGER trg_job_queue_wake_notify ON job_queue;
DROP TRIGGER trg_event_outbox_wake_notify ON event_outbox;
DROP FUNCTION fn_queue_wake_notify_job_queue();
DROP FUNCTION fn_queue_wake_notify_event_outbox();
DROP FUNCTION fn_queue_notify_enabled();
DELETE FROM dot_config WHERE key = 'queue.notify.bridge_enabled';
