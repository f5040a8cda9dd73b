-- 010_queue_health_substrate.sql
--
-- The tables of queue health and the job queue (a table migration: from
-- the first release on it is never edited again), and the dot_config keys they read:
--   queue_stale_alert      the stale-check's own memory, one row per executor
--   job_queue, job_kind_pause, job_dead_letter   the lease-based job queue
--   trg_dot_config_notify_bridge_sync            adds and drops the NOTIFY bridge's triggers
--                                                when queue.notify.bridge_enabled changes
-- The functions over them are generated into 011; sql/functions/*/README.md tells why each
-- table looks the way it does.

-- +goose Up
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
     'Executor ids (comma or whitespace separated) that no caller may beat (fn_cut_heartbeat_ping, fn_queue_heartbeat_tick and fn_queue_heartbeat_write refuse them), on top of iu_outbound_default, which is always protected.')
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
DROP TRIGGER trg_dot_config_notify_bridge_sync ON public.dot_config;
DROP TRIGGER IF EXISTS trg_job_queue_wake_notify ON public.job_queue;
DROP TRIGGER IF EXISTS trg_event_outbox_wake_notify ON public.event_outbox;
DELETE FROM public.dot_config WHERE key = 'queue.notify.bridge_enabled';
DELETE FROM public.dot_config WHERE key = 'queue.job.retention_seconds';
DROP TABLE public.job_kind_pause;
DROP TABLE public.job_dead_letter;
DROP TABLE public.job_queue;

DELETE FROM public.dot_config WHERE key IN ('queue.heartbeat.enabled', 'queue.heartbeat.stale_threshold_seconds',
                                     'queue.heartbeat.protected_executors');
DROP TRIGGER trg_queue_stale_alert_row ON public.queue_heartbeat;
DROP TABLE public.queue_stale_alert;
