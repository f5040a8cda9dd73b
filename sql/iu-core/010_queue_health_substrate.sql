-- 010_queue_health_substrate.sql
--
-- The tables of queue health and the job queue (a table migration: from
-- the first release on it is never edited again), and the dot_config keys they read:
--   queue_heartbeat        + registered_via, runner_instance: what may beat a row (issue 21)
--   queue_stale_alert      the stale-check's own memory, one row per executor
--   queue_stale_alert_contended  alerts sent while another session held that memory
--   queue_stale_check_serial     the row stale-checks take turns on
--   job_queue, job_kind_pause, job_dead_letter   the lease-based job queue
--   trg_dot_config_notify_bridge_sync            adds and drops the NOTIFY bridge's triggers
--                                                when queue.notify.bridge_enabled changes
-- The functions over them are generated into 011; sql/functions/*/README.md tells why each
-- table looks the way it does.

-- +goose Up
-- An adopted database: the package's functions and views exist now (009), so the roles that
-- could call a first-generation function of a package name may call the package's, the
-- producers may call fn_iu_emit_event, and the views built on a package-named view are
-- recreated on the package's.
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM iu_core.iu_adoption) THEN
        RAISE NOTICE 'iu-core: adoption completed: %', iu_core.fn_iu_adopt_after_functions();
    END IF;
END;
$$;
-- +goose StatementEnd

-- Where each heartbeat row came from, and who may beat it. A row is beaten by what created
-- it: 'register' (an operator; any executor, or the bound role's logins), 'tick' (a first
-- fn_queue_heartbeat_tick or ping, counted against queue.heartbeat.self_registered_limit),
-- 'route_worker' (only that worker's own run), 'runner' (only fn_queue_runner_beat from
-- the runner login it is bound to, and only by the live runner holding it: runner_instance,
-- a lease a runner renews with every beat and hands back when it stops).
ALTER TABLE public.queue_heartbeat
    ADD COLUMN registered_via  text NOT NULL DEFAULT 'register'
        CONSTRAINT queue_heartbeat_registered_via_ck CHECK (registered_via IN ('register', 'tick', 'route_worker', 'runner')),
    ADD COLUMN runner_instance uuid;

COMMENT ON COLUMN public.queue_heartbeat.registered_via IS
    'How the row was created: register (operator), tick (an executor''s first beat), route_worker (its own run beats it), runner (fn_queue_runner_beat only).';
COMMENT ON COLUMN public.queue_heartbeat.runner_instance IS
    'A runner row: the running process (one uuid per process) that holds it; NULL once released. Another runner may take it over 30 s after its last beat.';

-- A route worker's row is the route worker's even when it was created before this column.
UPDATE public.queue_heartbeat h SET registered_via = 'route_worker'
 WHERE EXISTS (SELECT 1 FROM public.iu_route_worker_cursor c WHERE c.worker_name = h.executor_id);

-- The stale-check's own alert state. It used to live on the heartbeat row and the
-- "already alerted in the window" rule read event_outbox: a caller able to write either
-- could make a real silence look handled (a forged silent alert, or a held lock on the
-- heartbeat row that the check skipped). Here it is a table of its own: one row per
-- executor (created with the heartbeat row, by trigger), written only by the package;
-- the stale-check locks this row, never the heartbeat row, so an executor that keeps its
-- own row locked cannot blind the check.
CREATE TABLE public.queue_stale_alert (
    executor_id      text        PRIMARY KEY,
    -- the open silence, if any, and the last alert sent for it
    silent_since     timestamptz,
    alerted_at       timestamptz,
    alerted_severity text        CHECK (alerted_severity IN ('warning', 'critical')),
    -- last_beat_at as it was when the open silence was alerted; a later beat is a recovery
    alerted_beat_at  timestamptz,
    -- the window memory: when a silent alert of each severity last went out for this
    -- executor (survives recovery, resume and re-registration, so the "no repeat inside
    -- 2 x threshold" rule holds whatever happened since)
    last_warning_at  timestamptz,
    last_critical_at timestamptz
);

COMMENT ON TABLE public.queue_stale_alert IS
    'fn_queue_stale_check''s own alert state, one row per executor. Written only by the package; no grants.';

-- The silent alerts a stale-check sent while another session held the executor's
-- alert-state row (an open transaction that ran a stale-check itself: it holds those rows
-- until it ends, and its rollback erases what it wrote). The check alerts anyway, from the
-- committed state, and keeps what it sent here: append-only and without a unique key, so
-- writing it never waits for anyone; the next check that holds the state row folds it in
-- (and deletes it), so the window and recovery rules see every alert that went out.
CREATE TABLE public.queue_stale_alert_contended (
    executor_id     text        NOT NULL,
    alerted_at      timestamptz NOT NULL,
    severity        text        NOT NULL CHECK (severity IN ('warning', 'critical')),
    silent_since    timestamptz,
    alerted_beat_at timestamptz,
    held_by         jsonb       NOT NULL DEFAULT '[]'::jsonb
);

-- One row whose lock stale-checks take in turn (fn_queue_stale_check waits for it at most
-- 1 s), so two running checks never skip each other's alert rows.
CREATE TABLE public.queue_stale_check_serial (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton)
);
INSERT INTO public.queue_stale_check_serial DEFAULT VALUES;
REVOKE ALL ON TABLE public.queue_stale_check_serial FROM PUBLIC;

CREATE INDEX queue_stale_alert_contended_idx ON public.queue_stale_alert_contended (executor_id, alerted_at);

COMMENT ON TABLE public.queue_stale_alert_contended IS
    'Silent alerts fn_queue_stale_check sent while another session held the executor''s queue_stale_alert row; folded into it by the next check that holds it. Written only by the package; no grants.';

REVOKE ALL ON TABLE public.queue_stale_alert_contended FROM PUBLIC;

CREATE TRIGGER trg_queue_stale_alert_row
    AFTER INSERT ON public.queue_heartbeat
    FOR EACH ROW EXECUTE FUNCTION iu_core.fn_queue_stale_alert_row();

INSERT INTO public.queue_stale_alert (executor_id) SELECT executor_id FROM public.queue_heartbeat ON CONFLICT DO NOTHING;

INSERT INTO public.dot_config (key, value, description) VALUES
    ('queue.heartbeat.enabled', 'true',
     'Heartbeat ping gate (fn_cut_heartbeat_ping). Only ''true'' opens it; otherwise pings return {"skipped": true}.'),
    ('queue.heartbeat.stale_threshold_seconds', '60',
     'Global floor (seconds) over every executor''s own stale threshold. Any non-negative integer (clamped to 2147483647); a missing or non-integer value means no floor. Set it huge to make fn_queue_stale_check inert.'),
    ('queue.heartbeat.protected_executors', '',
     'Executor ids (comma or whitespace separated) that no caller may beat (fn_cut_heartbeat_ping, fn_queue_heartbeat_tick and fn_queue_heartbeat_write refuse them), on top of iu_outbound_default, which is always protected.'),
    ('queue.heartbeat.self_registered_limit', '100',
     'How many executors may be created by executors themselves (a first fn_queue_heartbeat_tick or ping of an unknown id, or a runner''s first beat); past it such a beat is refused and an operator registers the executor (fn_queue_heartbeat_register). A non-negative integer; anything else means 100.')
ON CONFLICT (key) DO NOTHING;

REVOKE ALL ON TABLE public.queue_stale_alert FROM PUBLIC;

CREATE TABLE public.job_queue (
    job_id           uuid        PRIMARY KEY DEFAULT iu_core.fn_job_new_id(),
    job_kind         text        NOT NULL CHECK (job_kind <> ''),
    event_domain     text        NOT NULL CHECK (event_domain <> ''),
    status           text        NOT NULL DEFAULT 'queued'
                     CHECK (status IN ('queued', 'running', 'succeeded', 'dead')),
    payload          jsonb       NOT NULL DEFAULT '{}'::jsonb,
    process_after    timestamptz NOT NULL DEFAULT now(),
    enqueued_at      timestamptz NOT NULL DEFAULT now(),
    attempt          integer     NOT NULL DEFAULT 0 CHECK (attempt >= 0),
    max_attempts     integer     NOT NULL DEFAULT 5 CHECK (max_attempts > 0),
    lease_owner      text,
    lease_expires_at timestamptz,
    -- The fencing token of the current claim, or of the last one once it succeeded or failed
    -- (a retried complete or fail is answered already) until the next claim replaces it.
    lease_token      uuid,
    -- When that claim took the lease and the login that took it: a lease lives at most
    -- iu_core.fn_job_max_lease_seconds() from its claim however often it is extended, and
    -- the name-only complete and fail forms are refused to any other login.
    leased_at          timestamptz,
    lease_session_user text,
    last_error       text,
    dedupe_key       text,
    updated_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz,
    CONSTRAINT job_queue_payload_object CHECK (jsonb_typeof(payload) = 'object'),
    CONSTRAINT job_queue_payload_hygiene CHECK (iu_core.fn_iu_payload_is_clean(payload)),
    CONSTRAINT job_queue_lease_ck CHECK ((status = 'running') = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL)),
    CONSTRAINT job_queue_token_ck CHECK (status <> 'running' OR lease_token IS NOT NULL)
);

COMMENT ON TABLE public.job_queue IS
    'Lease-based job queue. Enqueue with fn_job_enqueue(_many), work with fn_job_claim / fn_job_extend_lease / fn_job_complete(_many) / fn_job_fail(_many).';

-- At most one live job per dedupe key; finished jobs free the key. Jobs without a key stay
-- out of the index, so they pay nothing for it.
CREATE UNIQUE INDEX job_queue_dedupe_live_uq ON public.job_queue (dedupe_key)
    WHERE dedupe_key IS NOT NULL AND status IN ('queued', 'running');

-- Claim: due queued jobs of one kind, oldest due first (the index supplies the order).
CREATE INDEX job_queue_due_idx ON public.job_queue (job_kind, process_after, job_id) WHERE status = 'queued';

-- Backlog per (kind, domain) for v_queue_health.
CREATE INDEX job_queue_backlog_idx ON public.job_queue (job_kind, event_domain, enqueued_at) INCLUDE (process_after)
    WHERE status = 'queued';

-- Reaper: running jobs by lease expiry.
CREATE INDEX job_queue_lease_idx ON public.job_queue (lease_expires_at) WHERE status = 'running';

-- Pruning: finished jobs, oldest first.
CREATE INDEX job_queue_finished_idx ON public.job_queue (finished_at) WHERE status IN ('succeeded', 'dead');

CREATE TABLE public.job_kind_pause (
    job_kind  text        PRIMARY KEY CHECK (job_kind <> ''),
    reason    text        NOT NULL,
    paused_by text        NOT NULL,
    paused_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE public.job_kind_pause IS
    'Job kinds an operator paused (fn_job_kind_pause): fn_job_claim skips them until fn_job_kind_resume.';

CREATE TABLE public.job_dead_letter (
    id             uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    job_id         uuid        NOT NULL,
    job_kind       text        NOT NULL,
    event_domain   text        NOT NULL,
    job_snapshot   jsonb       NOT NULL,
    attempts       integer     NOT NULL,
    last_error     text,
    last_failed_at timestamptz NOT NULL DEFAULT now(),
    resolved_at    timestamptz,
    resolution     text,
    resolved_by    text,
    replayed_job_id uuid,
    CONSTRAINT job_dead_letter_resolution_ck CHECK ((resolved_at IS NULL) = (resolution IS NULL))
);

COMMENT ON TABLE public.job_dead_letter IS
    'Dead jobs (out of attempts) with the whole job row. Replay (fn_job_dead_letter_replay) or resolve (fn_job_dead_letter_resolve); never deleted.';

CREATE INDEX job_dead_letter_open_idx ON public.job_dead_letter (job_kind, event_domain, last_failed_at) WHERE resolved_at IS NULL;

CREATE INDEX job_dead_letter_job_idx ON public.job_dead_letter (job_id);

CREATE TRIGGER trg_job_dead_letter_guard
    BEFORE UPDATE OR DELETE ON public.job_dead_letter
    FOR EACH ROW EXECUTE FUNCTION iu_core.fn_job_dead_letter_guard();

CREATE TRIGGER trg_job_dead_letter_no_truncate
    BEFORE TRUNCATE ON public.job_dead_letter
    FOR EACH STATEMENT EXECUTE FUNCTION iu_core.fn_job_dead_letter_guard();

INSERT INTO public.dot_config (key, value, description) VALUES
    ('queue.job.retention_seconds', '86400',
     'Seconds a finished job (succeeded, or dead and copied to job_dead_letter) stays in job_queue before fn_job_prune deletes it. 0 keeps them forever; a non-integer value also keeps everything (fn_job_prune reports it).')
ON CONFLICT (key) DO NOTHING;

REVOKE ALL ON TABLE public.job_queue, public.job_dead_letter, public.job_kind_pause FROM PUBLIC;

CREATE TRIGGER trg_dot_config_notify_bridge_sync
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.dot_config
    FOR EACH STATEMENT EXECUTE FUNCTION iu_core.fn_queue_notify_bridge_sync();

-- The gate, seeded closed (the insert fires the sync: a key kept from before that reads
-- 'true' gets its triggers).
INSERT INTO public.dot_config (key, value, description) VALUES
    ('queue.notify.bridge_enabled', 'false',
     'NOTIFY wake-up bridge on event_outbox and job_queue inserts (channel queue_wake_<domain>). Only ''true'' opens it.')
ON CONFLICT (key) DO NOTHING;


-- +goose Down
-- The job queue, its dead letters and pauses are history the package did not create: the
-- rollback refuses (IU005) while they hold rows, unless told to drop them.
SELECT iu_core.fn_iu_require_empty_history_at(10);
-- An adopted database: the views the user built on the package's views are set aside (the
-- rollback of 009 drops the package's; that of 008 recreates the legacy ones and then these).
-- +goose StatementBegin
DO $$
DECLARE
    v_views regclass[];
BEGIN
    IF EXISTS (SELECT 1 FROM iu_core.iu_adoption) THEN
        SELECT array_agg(c.oid::regclass) INTO v_views FROM pg_catalog.pg_class c
         WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'v'
           AND c.relname IN ('v_iu_route_worker_status', 'v_iu_route_dead_letter_open', 'v_iu_route_attempt_summary', 'v_queue_health');
        IF v_views IS NOT NULL THEN
            PERFORM iu_core.fn_iu_adopt_detach_views(v_views, 'keep');
        END IF;
    END IF;
END;
$$;
-- +goose StatementEnd
DROP TRIGGER trg_dot_config_notify_bridge_sync ON public.dot_config;
DROP TRIGGER IF EXISTS trg_job_queue_wake_notify ON public.job_queue;
DROP TRIGGER IF EXISTS trg_event_outbox_wake_notify ON public.event_outbox;
SELECT iu_core.fn_iu_forget_config('{queue.notify.bridge_enabled}');
SELECT iu_core.fn_iu_forget_config('{queue.job.retention_seconds}');
DROP TABLE public.job_kind_pause;
DROP TABLE public.job_dead_letter;
DROP TABLE public.job_queue;

SELECT iu_core.fn_iu_forget_config(ARRAY['queue.heartbeat.enabled', 'queue.heartbeat.stale_threshold_seconds',
                                         'queue.heartbeat.protected_executors', 'queue.heartbeat.self_registered_limit']);
DROP TRIGGER trg_queue_stale_alert_row ON public.queue_heartbeat;
DROP TABLE public.queue_stale_check_serial;
DROP TABLE public.queue_stale_alert_contended;
DROP TABLE public.queue_stale_alert;
ALTER TABLE public.queue_heartbeat DROP COLUMN runner_instance, DROP COLUMN registered_via;
