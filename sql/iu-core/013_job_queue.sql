-- 013_job_queue.sql
--
-- Adds the minimal lease-based job queue (the DP3 substrate DP4 reads) and its dead letters:
--   job_queue                     jobs: queued -> running (leased) -> succeeded | queued (retry) | dead
--   job_dead_letter               dead jobs with their whole row; resolved, never deleted (IU001)
--   fn_job_enqueue                dot_executor: enqueue, deduplicated on dedupe_key while live
--   fn_job_claim                  dot_executor: lease due jobs, FOR UPDATE SKIP LOCKED
--   fn_job_complete / fn_job_fail dot_executor: only the lease holder; a failure backs off
--                                 exponentially with jitter, dead at max_attempts
--   fn_job_reap_expired_leases    workflow_admin: expired leases back to queued (or dead)
--   fn_job_dead_letter_replay     workflow_admin: re-enqueue a dead job as a fresh job
--   fn_job_dead_letter_resolve    workflow_admin: close a dead job without replaying it
--
-- Why (durable-firing seed): leases for cluster safety (a job is worked by one holder at a
-- time, and a crashed holder's job comes back when its lease expires), attempts with backoff,
-- and a unique dedupe key for at-most-once enqueueing.
--
-- Lease rule: a job is the worker's while status = 'running', lease_owner = the worker and
-- lease_expires_at > now(). Claims take only queued jobs, so a live lease is never taken
-- again, whoever asks (another worker, or the same worker restarted in a new session).
-- Backoff: min(3600, 5 * 2^(attempt-1)) seconds, times a random factor in [0.75, 1.25).

-- +goose Up

CREATE TABLE job_queue (
    job_id           uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
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
    last_error       text,
    dedupe_key       text,
    updated_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz,
    CONSTRAINT job_queue_payload_object CHECK (jsonb_typeof(payload) = 'object'),
    CONSTRAINT job_queue_payload_hygiene CHECK (fn_iu_payload_is_clean(payload)),
    CONSTRAINT job_queue_lease_ck CHECK ((status = 'running') = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL))
);

COMMENT ON TABLE job_queue IS
    'Lease-based job queue. Enqueue with fn_job_enqueue, work with fn_job_claim / fn_job_complete / fn_job_fail.';

-- At most one live job per dedupe key; finished jobs free the key.
CREATE UNIQUE INDEX job_queue_dedupe_live_uq ON job_queue (dedupe_key) WHERE status IN ('queued', 'running');
-- Claim: due queued jobs of the asked kinds, oldest due first.
CREATE INDEX job_queue_due_idx ON job_queue (job_kind, process_after, job_id) WHERE status = 'queued';
-- Backlog per (kind, domain) for v_queue_health.
CREATE INDEX job_queue_backlog_idx ON job_queue (job_kind, event_domain, enqueued_at) INCLUDE (process_after)
    WHERE status = 'queued';
-- Reaper: running jobs by lease expiry.
CREATE INDEX job_queue_lease_idx ON job_queue (lease_expires_at) WHERE status = 'running';

CREATE TABLE job_dead_letter (
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

COMMENT ON TABLE job_dead_letter IS
    'Dead jobs (out of attempts) with the whole job row. Replay (fn_job_dead_letter_replay) or resolve (fn_job_dead_letter_resolve); never deleted.';

CREATE INDEX job_dead_letter_open_idx ON job_dead_letter (job_kind, event_domain, last_failed_at) WHERE resolved_at IS NULL;
CREATE INDEX job_dead_letter_job_idx ON job_dead_letter (job_id);

-- +goose StatementBegin
CREATE FUNCTION fn_job_dead_letter_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        -- Only the resolution may change; what died, and why, is history.
        IF (NEW.id, NEW.job_id, NEW.job_kind, NEW.event_domain, NEW.job_snapshot, NEW.attempts, NEW.last_error, NEW.last_failed_at)
           IS NOT DISTINCT FROM
           (OLD.id, OLD.job_id, OLD.job_kind, OLD.event_domain, OLD.job_snapshot, OLD.attempts, OLD.last_error, OLD.last_failed_at) THEN
            RETURN NEW;
        END IF;
        RAISE EXCEPTION 'fn_job_dead_letter_guard: only resolved_at, resolution, resolved_by and replayed_job_id of a job dead letter may change'
            USING ERRCODE = 'IU001',
                  HINT = 'Resolve it with fn_job_dead_letter_resolve or replay it with fn_job_dead_letter_replay.';
    END IF;
    RAISE EXCEPTION 'fn_job_dead_letter_guard: job dead letters are resolved, never deleted: % rejected', TG_OP
        USING ERRCODE = 'IU001',
              HINT = 'Resolve it with fn_job_dead_letter_resolve or replay it with fn_job_dead_letter_replay.';
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER trg_job_dead_letter_guard
    BEFORE UPDATE OR DELETE ON job_dead_letter
    FOR EACH ROW EXECUTE FUNCTION fn_job_dead_letter_guard();
CREATE TRIGGER trg_job_dead_letter_no_truncate
    BEFORE TRUNCATE ON job_dead_letter
    FOR EACH STATEMENT EXECUTE FUNCTION fn_job_dead_letter_guard();

-- +goose StatementBegin
CREATE FUNCTION fn_job_enqueue(
    p_job_kind      text,
    p_event_domain  text,
    p_payload       jsonb       DEFAULT '{}'::jsonb,
    p_process_after timestamptz DEFAULT now(),
    p_dedupe_key    text        DEFAULT NULL,
    p_max_attempts  integer     DEFAULT 5
)
RETURNS uuid
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_payload jsonb := coalesce(p_payload, '{}'::jsonb);
    v_id      uuid;
BEGIN
    IF coalesce(btrim(p_job_kind), '') = '' THEN
        RAISE EXCEPTION 'fn_job_enqueue: p_job_kind required' USING ERRCODE = '22023';
    END IF;
    IF coalesce(btrim(p_event_domain), '') = '' THEN
        RAISE EXCEPTION 'fn_job_enqueue: p_event_domain required' USING ERRCODE = '22023';
    END IF;
    PERFORM fn_iu_payload_require_clean('fn_job_enqueue', 'p_payload', v_payload);
    IF p_max_attempts IS NULL OR p_max_attempts NOT BETWEEN 1 AND 100 THEN
        RAISE EXCEPTION 'fn_job_enqueue: p_max_attempts must be between 1 and 100, got %',
            coalesce(p_max_attempts::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF p_dedupe_key IS NOT NULL AND btrim(p_dedupe_key) = '' THEN
        RAISE EXCEPTION 'fn_job_enqueue: p_dedupe_key must be NULL or non-empty' USING ERRCODE = '22023';
    END IF;

    -- A live job with the same key is returned instead of a duplicate. The loop covers the
    -- race where that job finishes between the conflict and the lookup.
    LOOP
        INSERT INTO job_queue (job_kind, event_domain, payload, process_after, max_attempts, dedupe_key)
        VALUES (p_job_kind, p_event_domain, v_payload, coalesce(p_process_after, now()), p_max_attempts, p_dedupe_key)
        ON CONFLICT (dedupe_key) WHERE status IN ('queued', 'running') DO NOTHING
        RETURNING job_id INTO v_id;
        IF v_id IS NOT NULL THEN
            RETURN v_id;
        END IF;
        SELECT j.job_id INTO v_id FROM job_queue j
         WHERE j.dedupe_key = p_dedupe_key AND j.status IN ('queued', 'running');
        IF v_id IS NOT NULL THEN
            RETURN v_id;
        END IF;
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_claim(p_worker text, p_job_kinds text[], p_limit integer DEFAULT 1, p_lease_seconds integer DEFAULT 60)
RETURNS SETOF job_queue
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
BEGIN
    IF coalesce(btrim(p_worker), '') = '' THEN
        RAISE EXCEPTION 'fn_job_claim: p_worker required' USING ERRCODE = '22023';
    END IF;
    IF p_job_kinds IS NULL OR cardinality(p_job_kinds) = 0 THEN
        RAISE EXCEPTION 'fn_job_claim: p_job_kinds required (an array of job kinds)' USING ERRCODE = '22023';
    END IF;
    IF p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'fn_job_claim: p_limit must be between 1 and 1000, got %', coalesce(p_limit::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;
    IF p_lease_seconds IS NULL OR p_lease_seconds NOT BETWEEN 1 AND 86400 THEN
        RAISE EXCEPTION 'fn_job_claim: p_lease_seconds must be between 1 and 86400, got %', coalesce(p_lease_seconds::text, 'NULL')
            USING ERRCODE = '22023';
    END IF;

    RETURN QUERY
    WITH due AS (
        SELECT j.job_id
          FROM job_queue j
         WHERE j.status = 'queued'
           AND j.job_kind = ANY (p_job_kinds)
           AND j.process_after <= now()
         ORDER BY j.process_after, j.job_id
         LIMIT p_limit
           FOR UPDATE SKIP LOCKED
    )
    UPDATE job_queue j
       SET status           = 'running',
           lease_owner      = p_worker,
           lease_expires_at = now() + make_interval(secs => p_lease_seconds),
           attempt          = j.attempt + 1,
           updated_at       = now()
      FROM due
     WHERE j.job_id = due.job_id
    RETURNING j.*;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_lease_row(p_function text, p_job_id uuid, p_worker text)
RETURNS job_queue
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
-- Shared by complete and fail: validates, locks the job, and returns it; NULL fields
-- (job_id IS NULL) when the caller does not hold a live lease.
DECLARE
    v_job job_queue;
BEGIN
    IF p_job_id IS NULL THEN
        RAISE EXCEPTION '%: p_job_id required', p_function USING ERRCODE = '22023';
    END IF;
    IF coalesce(btrim(p_worker), '') = '' THEN
        RAISE EXCEPTION '%: p_worker required', p_function USING ERRCODE = '22023';
    END IF;
    SELECT * INTO v_job FROM job_queue WHERE job_id = p_job_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: job % not found', p_function, p_job_id USING ERRCODE = 'P0002';
    END IF;
    IF v_job.status <> 'running' OR v_job.lease_owner IS DISTINCT FROM p_worker OR v_job.lease_expires_at <= now() THEN
        RETURN NULL;
    END IF;
    RETURN v_job;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_complete(p_job_id uuid, p_worker text)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_job job_queue := fn_job_lease_row('fn_job_complete', p_job_id, p_worker);
BEGIN
    IF v_job.job_id IS NULL THEN
        RETURN jsonb_build_object('refused', true, 'reason', 'lease_lost');
    END IF;
    UPDATE job_queue
       SET status = 'succeeded', lease_owner = NULL, lease_expires_at = NULL,
           finished_at = now(), updated_at = now()
     WHERE job_id = p_job_id;
    RETURN jsonb_build_object('completed', true, 'job_id', p_job_id, 'status', 'succeeded',
                              'attempt', v_job.attempt, 'worker', p_worker);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_dead_letter_insert(p_job_id uuid)
RETURNS uuid
LANGUAGE sql
SET search_path = public, pg_temp
AS $$
    -- Copies a job that just went dead into job_dead_letter, whole row included.
    INSERT INTO job_dead_letter (job_id, job_kind, event_domain, job_snapshot, attempts, last_error, last_failed_at)
    SELECT j.job_id, j.job_kind, j.event_domain, to_jsonb(j), j.attempt, j.last_error, now()
      FROM job_queue j WHERE j.job_id = p_job_id
    RETURNING id
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_fail(p_job_id uuid, p_worker text, p_error text)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_job     job_queue := fn_job_lease_row('fn_job_fail', p_job_id, p_worker);
    v_error   text := left(coalesce(nullif(btrim(p_error), ''), 'unspecified failure'), 2000);
    v_backoff numeric;
    v_retry   timestamptz;
    v_dl      uuid;
BEGIN
    IF v_job.job_id IS NULL THEN
        RETURN jsonb_build_object('refused', true, 'reason', 'lease_lost');
    END IF;

    IF v_job.attempt >= v_job.max_attempts THEN
        UPDATE job_queue
           SET status = 'dead', lease_owner = NULL, lease_expires_at = NULL, last_error = v_error,
               finished_at = now(), updated_at = now()
         WHERE job_id = p_job_id;
        v_dl := fn_job_dead_letter_insert(p_job_id);
        RETURN jsonb_build_object('failed', true, 'dead', true, 'job_id', p_job_id, 'status', 'dead',
                                  'attempt', v_job.attempt, 'max_attempts', v_job.max_attempts,
                                  'dead_letter_id', v_dl);
    END IF;

    v_backoff := round((least(3600, 5 * power(2, v_job.attempt - 1)) * (0.75 + random() * 0.5))::numeric, 3);
    v_retry   := now() + make_interval(secs => v_backoff);
    UPDATE job_queue
       SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL, last_error = v_error,
           process_after = v_retry, updated_at = now()
     WHERE job_id = p_job_id;
    RETURN jsonb_build_object('failed', true, 'dead', false, 'job_id', p_job_id, 'status', 'queued',
                              'attempt', v_job.attempt, 'max_attempts', v_job.max_attempts,
                              'backoff_seconds', v_backoff, 'retry_at', v_retry);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_reap_expired_leases()
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Running jobs whose lease expired: back to queued (due at once) while attempts remain,
-- otherwise dead and copied to job_dead_letter. Rows locked by someone else (a holder
-- completing at this moment) are skipped: the next reap sees them.
DECLARE
    v_requeued bigint;
    v_dead     bigint;
BEGIN
    WITH expired AS (
        SELECT j.job_id FROM job_queue j
         WHERE j.status = 'running' AND j.lease_expires_at <= now()
           FOR UPDATE SKIP LOCKED
    ), moved AS (
        UPDATE job_queue j
           SET status           = CASE WHEN j.attempt >= j.max_attempts THEN 'dead' ELSE 'queued' END,
               last_error       = format('lease of %s expired at %s', j.lease_owner, j.lease_expires_at),
               lease_owner      = NULL,
               lease_expires_at = NULL,
               process_after    = CASE WHEN j.attempt >= j.max_attempts THEN j.process_after ELSE now() END,
               finished_at      = CASE WHEN j.attempt >= j.max_attempts THEN now() END,
               updated_at       = now()
          FROM expired e
         WHERE j.job_id = e.job_id
        RETURNING j.*
    ), dl AS (
        INSERT INTO job_dead_letter (job_id, job_kind, event_domain, job_snapshot, attempts, last_error, last_failed_at)
        SELECT m.job_id, m.job_kind, m.event_domain, to_jsonb(m), m.attempt, m.last_error, now()
          FROM moved m WHERE m.status = 'dead'
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM moved WHERE status = 'queued'), (SELECT count(*) FROM dl)
      INTO v_requeued, v_dead;
    RETURN jsonb_build_object('reaped', v_requeued + v_dead, 'requeued', v_requeued, 'dead_lettered', v_dead);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_dead_letter_replay(p_dead_letter_id uuid, p_actor text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Re-enqueues a dead job as a fresh job (new job_id, attempt 0, due now) from its snapshot,
-- with its kind, domain, payload, max_attempts and dedupe key, and resolves the dead letter.
DECLARE
    v_dl  job_dead_letter;
    v_new uuid;
BEGIN
    IF p_dead_letter_id IS NULL THEN
        RAISE EXCEPTION 'fn_job_dead_letter_replay: p_dead_letter_id required' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO v_dl FROM job_dead_letter WHERE id = p_dead_letter_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fn_job_dead_letter_replay: dead letter % not found', p_dead_letter_id USING ERRCODE = 'P0002',
            HINT = 'Open job dead letters: SELECT id, job_kind, last_error FROM job_dead_letter WHERE resolved_at IS NULL;';
    END IF;
    IF v_dl.resolved_at IS NOT NULL THEN
        RETURN jsonb_build_object('replayed', false, 'reason', 'already_resolved', 'dead_letter_id', v_dl.id,
                                  'resolution', v_dl.resolution, 'resolved_at', v_dl.resolved_at);
    END IF;
    v_new := fn_job_enqueue(v_dl.job_kind, v_dl.event_domain,
                            coalesce(v_dl.job_snapshot -> 'payload', '{}'::jsonb), now(),
                            v_dl.job_snapshot ->> 'dedupe_key',
                            coalesce((v_dl.job_snapshot ->> 'max_attempts')::integer, 5));
    UPDATE job_dead_letter
       SET resolved_at = now(), resolution = 'replayed', resolved_by = fn_queue_actor(p_actor), replayed_job_id = v_new
     WHERE id = v_dl.id;
    RETURN jsonb_build_object('replayed', true, 'dead_letter_id', v_dl.id, 'job_id', v_new,
                              'original_job_id', v_dl.job_id, 'resolution', 'replayed');
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_dead_letter_resolve(p_dead_letter_id uuid, p_resolution text, p_actor text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_dl job_dead_letter;
BEGIN
    IF p_dead_letter_id IS NULL THEN
        RAISE EXCEPTION 'fn_job_dead_letter_resolve: p_dead_letter_id required' USING ERRCODE = '22023';
    END IF;
    IF coalesce(btrim(p_resolution), '') = '' THEN
        RAISE EXCEPTION 'fn_job_dead_letter_resolve: p_resolution required' USING ERRCODE = '22023',
            HINT = 'Say what was done, e.g. ''obsolete: superseded by job ...'' or ''fixed by hand, ticket OPS-1''.';
    END IF;
    SELECT * INTO v_dl FROM job_dead_letter WHERE id = p_dead_letter_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fn_job_dead_letter_resolve: dead letter % not found', p_dead_letter_id USING ERRCODE = 'P0002';
    END IF;
    IF v_dl.resolved_at IS NOT NULL THEN
        RETURN jsonb_build_object('resolved', false, 'reason', 'already_resolved', 'dead_letter_id', v_dl.id,
                                  'resolution', v_dl.resolution);
    END IF;
    UPDATE job_dead_letter
       SET resolved_at = now(), resolution = p_resolution, resolved_by = fn_queue_actor(p_actor)
     WHERE id = v_dl.id
    RETURNING * INTO v_dl;
    RETURN jsonb_build_object('resolved', true, 'dead_letter_id', v_dl.id, 'resolution', v_dl.resolution,
                              'resolved_by', v_dl.resolved_by, 'resolved_at', v_dl.resolved_at);
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON TABLE job_queue, job_dead_letter FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_dead_letter_guard() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_enqueue(text, text, jsonb, timestamptz, text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_claim(text, text[], integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_lease_row(text, uuid, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_complete(uuid, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_dead_letter_insert(uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_fail(uuid, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_reap_expired_leases() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_dead_letter_replay(uuid, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_dead_letter_resolve(uuid, text, text) FROM PUBLIC;

GRANT EXECUTE ON FUNCTION fn_job_enqueue(text, text, jsonb, timestamptz, text, integer) TO dot_executor;
GRANT EXECUTE ON FUNCTION fn_job_claim(text, text[], integer, integer) TO dot_executor;
GRANT EXECUTE ON FUNCTION fn_job_complete(uuid, text) TO dot_executor;
GRANT EXECUTE ON FUNCTION fn_job_fail(uuid, text, text) TO dot_executor;
GRANT EXECUTE ON FUNCTION fn_job_reap_expired_leases() TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_job_dead_letter_replay(uuid, text) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_job_dead_letter_resolve(uuid, text, text) TO workflow_admin;

-- +goose Down
DROP FUNCTION fn_job_dead_letter_resolve(uuid, text, text);
DROP FUNCTION fn_job_dead_letter_replay(uuid, text);
DROP FUNCTION fn_job_reap_expired_leases();
DROP FUNCTION fn_job_fail(uuid, text, text);
DROP FUNCTION fn_job_dead_letter_insert(uuid);
DROP FUNCTION fn_job_complete(uuid, text);
DROP FUNCTION fn_job_lease_row(text, uuid, text);
DROP FUNCTION fn_job_claim(text, text[], integer, integer);
DROP FUNCTION fn_job_enqueue(text, text, jsonb, timestamptz, text, integer);
DROP TABLE job_dead_letter;
DROP FUNCTION fn_job_dead_letter_guard();
DROP TABLE job_queue;
