-- 014_queue_notify_bridge.sql
--
-- Adds the opt-in LISTEN/NOTIFY wake-up bridge:
--   fn_queue_notify_enabled()   reads dot_config queue.notify.bridge_enabled (seeded 'false';
--                               fail-closed: only the exact value 'true' opens it)
--   AFTER INSERT statement triggers on event_outbox and job_queue that call
--   pg_notify('queue_wake_' || domain, payload), present ONLY while the gate is open;
--   fn_queue_notify_bridge_sync()  a trigger on dot_config that adds them when the gate
--                               opens and drops them when it closes.
--
-- Why the triggers come and go with the gate: a statement trigger with a transition table
-- makes PostgreSQL capture every inserted row into a tuplestore and queue an AFTER event,
-- and the function then reads the gate (a guarded call) on every statement. A trigger that
-- is there but switched off cost every producer about a third of its insert rate. A closed
-- gate now installs nothing, so it costs nothing. The gate is still opened and closed the
-- way it always was (UPDATE/INSERT/DELETE on dot_config, which only the package owner and
-- superusers may write); the sync runs as the package owner (the triggers' table owner) in
-- the same transaction, so the gate's value and the triggers' presence commit together.
-- The trigger functions still read the gate first: if the two ever disagree (triggers
-- disabled during a restore, session_replication_role = replica), a closed gate still
-- sends nothing, and an open gate without triggers only falls back to the poll. Any write
-- to the key (UPDATE dot_config SET value = value WHERE key = ...) re-syncs them.
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

-- fn_queue_notify_bridge_sync: an AFTER statement trigger on dot_config (any INSERT, UPDATE,
-- DELETE or TRUNCATE; the table is small and rarely written) that makes the bridge's two
-- triggers present exactly when fn_queue_notify_enabled() is true:
--   open   and a trigger is missing -> CREATE TRIGGER (statement level, REFERENCING NEW
--          TABLE: allowed on a partitioned table's root too);
--   closed and a trigger is present -> DROP TRIGGER;
--   otherwise nothing (no DDL, no lock: the other gates and settings change freely).
-- SECURITY DEFINER: the DDL runs as the package owner, who owns both tables, whoever wrote
-- dot_config (today only the owner and superusers may). Guarded like every SECURITY
-- DEFINER function (the enabled test comes first and starts with the guard). CREATE and
-- DROP TRIGGER lock the table against inserts until the flip commits, so the wait for that
-- lock is bounded (lock_timeout 5 s): behind a long transaction on the outbox the flip
-- fails with 55P03 and a HINT instead of stalling every producer queued behind it.
-- +goose StatementBegin
CREATE FUNCTION fn_queue_notify_bridge_sync()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
SET lock_timeout = '5s'
AS $$
DECLARE
    v_open boolean := fn_queue_notify_enabled();
    v_has_event boolean;
    v_has_job boolean;
BEGIN
    SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
                    WHERE t.tgrelid = 'public.event_outbox'::pg_catalog.regclass AND t.tgname = 'trg_event_outbox_wake_notify'),
           EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
                    WHERE t.tgrelid = 'public.job_queue'::pg_catalog.regclass AND t.tgname = 'trg_job_queue_wake_notify')
      INTO v_has_event, v_has_job;
    BEGIN
        IF v_open AND NOT v_has_event THEN
            CREATE TRIGGER trg_event_outbox_wake_notify
                AFTER INSERT ON public.event_outbox
                REFERENCING NEW TABLE AS new_rows
                FOR EACH STATEMENT EXECUTE FUNCTION public.fn_queue_wake_notify_event_outbox();
        ELSIF NOT v_open AND v_has_event THEN
            DROP TRIGGER trg_event_outbox_wake_notify ON public.event_outbox;
        END IF;
        IF v_open AND NOT v_has_job THEN
            CREATE TRIGGER trg_job_queue_wake_notify
                AFTER INSERT ON public.job_queue
                REFERENCING NEW TABLE AS new_rows
                FOR EACH STATEMENT EXECUTE FUNCTION public.fn_queue_wake_notify_job_queue();
        ELSIF NOT v_open AND v_has_job THEN
            DROP TRIGGER trg_job_queue_wake_notify ON public.job_queue;
        END IF;
    EXCEPTION WHEN lock_not_available THEN
        RAISE EXCEPTION 'fn_queue_notify_bridge_sync: the NOTIFY bridge gate could not be % within 5 s: a transaction holds event_outbox or job_queue',
            CASE WHEN v_open THEN 'opened' ELSE 'closed' END
            USING ERRCODE = '55P03',
                  HINT = 'Retry the dot_config change; pg_locks shows which session holds the table.';
    END;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER trg_dot_config_notify_bridge_sync
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON dot_config
    FOR EACH STATEMENT EXECUTE FUNCTION fn_queue_notify_bridge_sync();

REVOKE ALL ON FUNCTION fn_queue_notify_enabled() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_wake_notify_event_outbox() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_wake_notify_job_queue() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_notify_bridge_sync() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fn_queue_notify_enabled() TO workflow_admin, dot_executor;

-- The gate, seeded closed (the insert fires the sync: a key kept from before that reads
-- 'true' gets its triggers).
INSERT INTO dot_config (key, value, description) VALUES
    ('queue.notify.bridge_enabled', 'false',
     'NOTIFY wake-up bridge on event_outbox and job_queue inserts (channel queue_wake_<domain>). Only ''true'' opens it.')
ON CONFLICT (key) DO NOTHING;

-- +goose Down
DROP TRIGGER trg_dot_config_notify_bridge_sync ON dot_config;
DROP TRIGGER IF EXISTS trg_job_queue_wake_notify ON job_queue;
DROP TRIGGER IF EXISTS trg_event_outbox_wake_notify ON event_outbox;
DROP FUNCTION fn_queue_notify_bridge_sync();
DROP FUNCTION fn_queue_wake_notify_job_queue();
DROP FUNCTION fn_queue_wake_notify_event_outbox();
DROP FUNCTION fn_queue_notify_enabled();
DELETE FROM dot_config WHERE key = 'queue.notify.bridge_enabled';
