-- 013_job_queue.sql
--
-- Adds the lease-based job queue (the DP3 substrate DP4 reads) and its dead letters:
--   job_queue                       jobs: queued -> running (leased) -> succeeded | queued (retry) | dead
--   job_dead_letter                 dead jobs with their whole row; resolved, never deleted (IU001)
--   job_kind_pause                  job kinds an operator paused: claims skip them
--   fn_job_enqueue                  dot_executor: enqueue one, deduplicated on dedupe_key while live
--   fn_job_enqueue_many             dot_executor: enqueue an array of payloads in one statement
--   fn_job_claim                    dot_executor: lease up to N due jobs in one statement, each
--                                   with a fresh lease_token (the fencing token)
--   fn_job_extend_lease             dot_executor: renew a live lease (long jobs)
--   fn_job_complete / fn_job_fail   dot_executor: only the holder of the current token; a failure
--                                   backs off exponentially with jitter, dead at max_attempts
--   fn_job_complete_many / fn_job_fail_many
--                                   dot_executor: the same for a batch, one statement each
--   fn_job_reap_expired_leases      workflow_admin: expired leases back to queued (or dead)
--   fn_job_prune                    workflow_admin: delete finished jobs past the retention
--   fn_job_kind_pause / _resume     workflow_admin: stop / restart claiming a kind
--   fn_job_dead_letter_replay       workflow_admin: re-enqueue a dead job as a fresh job
--   fn_job_dead_letter_resolve      workflow_admin: close a dead job without replaying it
-- (fn_job_dead_letter_replay_many, the bulk replay, is in 016.)
--
-- Why (durable-firing seed): leases for cluster safety (a job is worked by one holder at a
-- time, and a crashed holder's job comes back when its lease expires), attempts with backoff,
-- and a unique dedupe key for at-most-once enqueueing.
--
-- Lease rule (fencing): every claim writes a fresh random lease_token into the job and hands
-- it to the claimer. A job is the caller's while status = 'running', lease_owner = the
-- caller's worker name, lease_token = the caller's token and lease_expires_at > now().
-- Names alone do not fence: two sessions that share a worker name (two goroutines, or a
-- restarted worker reusing its name) would each pass a name check, so a stalled first
-- holder could complete a job a second holder re-claimed after the reaper requeued it. The
-- token differs per claim, so the stale holder is refused and the current one is not. The
-- token stays on a succeeded job, so a complete retried after its first answer was lost is
-- told {"completed": true, "already": true} instead of a misleading lease_lost.
-- The two-argument fn_job_complete and three-argument fn_job_fail check the name only: they
-- are kept for existing callers and are UNSAFE when worker names are shared.
--
-- Delivery contract: at least once. A job whose holder dies, stalls past its lease or loses
-- its connection before its complete commits is claimed again (attempt counted), so job
-- side effects must be idempotent; the dedupe key makes enqueueing at most once per live key.
--
-- Claim cost: the due index is (job_kind, process_after, job_id) over queued rows, and each
-- asked kind is read through it with an equality on job_kind, so the index supplies the
-- order and a claim of N reads about N index entries, however deep the backlog. (A filter
-- job_kind = ANY(kinds) cannot use the index order and sorted the whole backlog per claim.)
-- Finished rows are outside the partial indexes, so they cost the claim nothing; fn_job_prune
-- deletes them after queue.job.retention_seconds.
--
-- Backoff: min(3600, 5 * 2^(attempt-1)) seconds, times a random factor in [0.75, 1.25).
-- Limits: process_after must be finite and at most one year ahead (a never-due job would
-- hold its dedupe key forever); job kinds, worker names, event domains and dedupe keys are
-- non-blank and at most 200 bytes; a batch holds at most 10,000 elements, a claim 1,000.

-- +goose Up

-- +goose StatementBegin
CREATE FUNCTION fn_job_new_id()
RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$
    -- A time-ordered job id: 48 bits of Unix milliseconds, the version nibble 7, then 76
    -- bits of a hash of random(). Why time-ordered: ids drawn in enqueue order land at the
    -- right edge of the primary key instead of on random pages, so enqueueing stays as
    -- cheap with a million rows in the table as with none. Why random() and not
    -- gen_random_uuid(): ids must be unique, not secret, and the strong generator costs
    -- several times more per row; within one millisecond the random part (seeded per
    -- session from the strong generator) makes a collision vanishingly unlikely, and the
    -- primary key would refuse one rather than merge two jobs.
    SELECT (lpad(to_hex(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0')
            || '7' || substr(md5(random()::text), 1, 19))::uuid
$$;
-- +goose StatementEnd

CREATE TABLE job_queue (
    job_id           uuid        PRIMARY KEY DEFAULT fn_job_new_id(),
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
    -- The fencing token of the current (or, once succeeded, the last) claim.
    lease_token      uuid,
    last_error       text,
    dedupe_key       text,
    updated_at       timestamptz NOT NULL DEFAULT now(),
    finished_at      timestamptz,
    CONSTRAINT job_queue_payload_object CHECK (jsonb_typeof(payload) = 'object'),
    CONSTRAINT job_queue_payload_hygiene CHECK (fn_iu_payload_is_clean(payload)),
    CONSTRAINT job_queue_lease_ck CHECK ((status = 'running') = (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL)),
    CONSTRAINT job_queue_token_ck CHECK (status <> 'running' OR lease_token IS NOT NULL)
);

COMMENT ON TABLE job_queue IS
    'Lease-based job queue. Enqueue with fn_job_enqueue(_many), work with fn_job_claim / fn_job_extend_lease / fn_job_complete(_many) / fn_job_fail(_many).';

-- At most one live job per dedupe key; finished jobs free the key. Jobs without a key stay
-- out of the index, so they pay nothing for it.
CREATE UNIQUE INDEX job_queue_dedupe_live_uq ON job_queue (dedupe_key)
    WHERE dedupe_key IS NOT NULL AND status IN ('queued', 'running');
-- Claim: due queued jobs of one kind, oldest due first (the index supplies the order).
CREATE INDEX job_queue_due_idx ON job_queue (job_kind, process_after, job_id) WHERE status = 'queued';
-- Backlog per (kind, domain) for v_queue_health.
CREATE INDEX job_queue_backlog_idx ON job_queue (job_kind, event_domain, enqueued_at) INCLUDE (process_after)
    WHERE status = 'queued';
-- Reaper: running jobs by lease expiry.
CREATE INDEX job_queue_lease_idx ON job_queue (lease_expires_at) WHERE status = 'running';
-- Pruning: finished jobs, oldest first.
CREATE INDEX job_queue_finished_idx ON job_queue (finished_at) WHERE status IN ('succeeded', 'dead');

CREATE TABLE job_kind_pause (
    job_kind  text        PRIMARY KEY CHECK (job_kind <> ''),
    reason    text        NOT NULL,
    paused_by text        NOT NULL,
    paused_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE job_kind_pause IS
    'Job kinds an operator paused (fn_job_kind_pause): fn_job_claim skips them until fn_job_kind_resume.';

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
CREATE FUNCTION fn_job_require_process_after(p_caller text, p_process_after timestamptz)
RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET search_path = public, pg_temp
AS $$
-- The one check of a caller's process_after: NULL means now; infinity, -infinity and
-- anything more than one year ahead are refused (22023). Why: a job that is never due
-- would hold its dedupe key forever and block every later enqueue of that key.
-- Returns the value to store.
BEGIN
    IF p_process_after IS NULL THEN
        RETURN now();
    END IF;
    IF NOT isfinite(p_process_after) THEN
        RAISE EXCEPTION '%: p_process_after must be a finite time, got %', p_caller, p_process_after
            USING ERRCODE = '22023', HINT = 'Pass a time at most one year ahead, or NULL for now.';
    END IF;
    IF p_process_after > now() + interval '1 year' THEN
        RAISE EXCEPTION '%: p_process_after % is more than one year ahead', p_caller, p_process_after
            USING ERRCODE = '22023', HINT = 'Jobs may be scheduled at most one year ahead; re-enqueue later for longer delays.';
    END IF;
    RETURN p_process_after;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_require_range(p_caller text, p_param text, p_value integer, p_min integer, p_max integer)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE
AS $$
-- The one bounds check for the integer arguments of the queue (limits, lease seconds,
-- max attempts): NULL or out of [p_min, p_max] is refused with 22023. Returns the value.
BEGIN
    IF p_value IS NULL OR p_value NOT BETWEEN p_min AND p_max THEN
        RAISE EXCEPTION '%: % must be between % and %, got %', p_caller, p_param, p_min, p_max,
            coalesce(p_value::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    RETURN p_value;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_holds_lease(p_job job_queue, p_worker text, p_lease_token uuid)
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    -- The lease rule, written once: the job is running, leased to this worker name, the
    -- lease has not expired and (unless p_lease_token is NULL, which only the name-only
    -- legacy forms pass) the token is the current claim's. No SET clause, so the planner
    -- inlines it into the batch UPDATEs; it touches no table.
    SELECT p_job.status = 'running'
       AND p_job.lease_owner = p_worker
       AND p_job.lease_expires_at > now()
       AND (p_lease_token IS NULL OR p_job.lease_token = p_lease_token)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_retry_delay(p_attempt integer)
RETURNS numeric
LANGUAGE sql VOLATILE
AS $$
    -- Backoff after failed attempt p_attempt: min(3600, 5 * 2^(attempt-1)) seconds times a
    -- random factor in [0.75, 1.25), so failures of many jobs at once do not retry in step.
    SELECT round((least(3600, 5 * power(2, greatest(p_attempt, 1) - 1)) * (0.75 + random() * 0.5))::numeric, 3)
$$;
-- +goose StatementEnd

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
-- Enqueues one job and returns its id; a live job (queued or running) with the same dedupe
-- key is returned instead of a duplicate.
DECLARE
    v_payload jsonb := coalesce(p_payload, '{}'::jsonb);
    v_after   timestamptz;
    v_id      uuid;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_job_enqueue');
    PERFORM fn_iu_require_name('fn_job_enqueue', 'p_job_kind', p_job_kind);
    PERFORM fn_iu_require_name('fn_job_enqueue', 'p_event_domain', p_event_domain);
    PERFORM fn_iu_payload_require_clean('fn_job_enqueue', 'p_payload', v_payload);
    v_after := fn_job_require_process_after('fn_job_enqueue', p_process_after);
    PERFORM fn_job_require_range('fn_job_enqueue', 'p_max_attempts', p_max_attempts, 1, 100);
    IF p_dedupe_key IS NOT NULL THEN
        PERFORM fn_iu_require_name('fn_job_enqueue', 'p_dedupe_key', p_dedupe_key);
    END IF;

    -- The loop covers the race where the live job finishes between the conflict and the lookup.
    LOOP
        INSERT INTO job_queue (job_kind, event_domain, payload, process_after, max_attempts, dedupe_key)
        VALUES (p_job_kind, p_event_domain, v_payload, v_after, p_max_attempts, p_dedupe_key)
        ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL AND status IN ('queued', 'running') DO NOTHING
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
CREATE FUNCTION fn_job_enqueue_many(
    p_job_kind      text,
    p_event_domain  text,
    p_payloads      jsonb,
    p_process_after timestamptz DEFAULT now(),
    p_dedupe_keys   text[]      DEFAULT NULL,
    p_max_attempts  integer     DEFAULT 5
)
RETURNS uuid[]
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Enqueues one job per element of the JSON array p_payloads (each an object, hygiene
-- checked), all of one kind and domain, in one INSERT. p_dedupe_keys, when given, has one
-- key (or NULL) per payload; a key with a live job, or repeated inside the batch, yields
-- the existing job instead of a duplicate. Returns the job ids in input order (element i
-- of the result belongs to payload i). At most 10,000 payloads per call. The arguments are
-- all checked before anything is written, so a bad element writes nothing.
DECLARE
    v_n       integer;
    v_after   timestamptz;
    v_bad     record;
    v_ids     uuid[];
    v_missing integer;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_job_enqueue_many');
    PERFORM fn_iu_require_name('fn_job_enqueue_many', 'p_job_kind', p_job_kind);
    PERFORM fn_iu_require_name('fn_job_enqueue_many', 'p_event_domain', p_event_domain);
    IF p_payloads IS NULL OR jsonb_typeof(p_payloads) <> 'array' THEN
        RAISE EXCEPTION 'fn_job_enqueue_many: p_payloads must be a JSON array of objects' USING ERRCODE = '22023',
            HINT = 'For example ''[{"ref": 1}, {"ref": 2}]''::jsonb.';
    END IF;
    -- The whole batch is bounded before anything reads it (8 MiB as jsonb: 10,000 payloads
    -- of ~800 bytes), so the hygiene pass below never works on more than that.
    IF pg_column_size(p_payloads) > 8388608 THEN
        RAISE EXCEPTION 'fn_job_enqueue_many: p_payloads is % bytes as jsonb, at most 8388608 allowed', pg_column_size(p_payloads)
            USING ERRCODE = '22023', HINT = 'Enqueue in smaller batches.';
    END IF;
    v_n := jsonb_array_length(p_payloads);
    PERFORM fn_job_require_range('fn_job_enqueue_many', 'the number of payloads', v_n, 0, 10000);
    IF v_n = 0 THEN
        RETURN '{}'::uuid[];
    END IF;
    v_after := fn_job_require_process_after('fn_job_enqueue_many', p_process_after);
    PERFORM fn_job_require_range('fn_job_enqueue_many', 'p_max_attempts', p_max_attempts, 1, 100);
    IF p_dedupe_keys IS NOT NULL THEN
        IF cardinality(p_dedupe_keys) <> v_n THEN
            RAISE EXCEPTION 'fn_job_enqueue_many: p_dedupe_keys has % elements, p_payloads %', cardinality(p_dedupe_keys), v_n
                USING ERRCODE = '22023', HINT = 'Pass one key (or NULL) per payload, or NULL for no keys.';
        END IF;
        PERFORM fn_iu_require_name('fn_job_enqueue_many', format('p_dedupe_keys[%s]', k.ord), k.key)
           FROM unnest(p_dedupe_keys) WITH ORDINALITY AS k(key, ord)
          WHERE k.key IS NOT NULL;
    END IF;
    -- One pass over the whole array (the hygiene test looks at every depth, elements
    -- included); only when it fails is each element tested, so the first bad one gets the
    -- same message a single enqueue would give. The array itself may fail where no element
    -- does (the size and depth bounds are per payload, and the array is one level deeper
    -- and as large as all of them): then nothing is refused.
    IF p_payloads @? '$[*] ? (@.type() != "object")' OR NOT fn_iu_payload_is_clean(p_payloads) THEN
        SELECT e.ord, e.value INTO v_bad
          FROM jsonb_array_elements(p_payloads) WITH ORDINALITY AS e(value, ord)
         WHERE jsonb_typeof(e.value) <> 'object' OR NOT fn_iu_payload_is_clean(e.value)
         ORDER BY e.ord
         LIMIT 1;
        IF FOUND THEN
            PERFORM fn_iu_payload_require_clean('fn_job_enqueue_many', format('p_payloads[%s]', v_bad.ord - 1), v_bad.value);
        END IF;
    END IF;

    IF p_dedupe_keys IS NULL THEN
        -- No keys, no conflicts: the ids are drawn first and returned as they are.
        v_ids := ARRAY(SELECT fn_job_new_id() FROM generate_series(1, v_n));
        INSERT INTO job_queue (job_id, job_kind, event_domain, payload, process_after, max_attempts)
        SELECT v_ids[e.ord], p_job_kind, p_event_domain, e.value, v_after, p_max_attempts
          FROM jsonb_array_elements(p_payloads) WITH ORDINALITY AS e(value, ord);
        RETURN v_ids;
    END IF;

    -- Ids are drawn before the INSERT so each element can be matched to its row; an element
    -- whose key conflicted takes the id of the live job (inserted earlier in this batch, or
    -- already in the table).
    WITH input AS MATERIALIZED (
        SELECT e.ord, fn_job_new_id() AS new_id, e.value AS payload,
               p_dedupe_keys[e.ord] AS dedupe_key
          FROM jsonb_array_elements(p_payloads) WITH ORDINALITY AS e(value, ord)
    ), ins AS (
        INSERT INTO job_queue (job_id, job_kind, event_domain, payload, process_after, max_attempts, dedupe_key)
        SELECT i.new_id, p_job_kind, p_event_domain, i.payload, v_after, p_max_attempts, i.dedupe_key
          FROM input i
         ORDER BY i.ord
        ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL AND status IN ('queued', 'running') DO NOTHING
        RETURNING job_id, dedupe_key
    )
    SELECT array_agg(coalesce(mine.job_id, batch.job_id, live.job_id) ORDER BY i.ord)
      INTO v_ids
      FROM input i
      LEFT JOIN ins mine ON mine.job_id = i.new_id
      LEFT JOIN ins batch ON mine.job_id IS NULL AND batch.dedupe_key = i.dedupe_key
      LEFT JOIN job_queue live ON mine.job_id IS NULL AND batch.job_id IS NULL
                              AND live.dedupe_key = i.dedupe_key AND live.status IN ('queued', 'running');

    -- Rare: a live job that blocked a key finished before the lookup. Enqueue those again,
    -- one by one, with the single-job rule (which loops on the same race).
    v_missing := array_position(v_ids, NULL);
    WHILE v_missing IS NOT NULL LOOP
        v_ids[v_missing] := fn_job_enqueue(p_job_kind, p_event_domain, p_payloads -> (v_missing - 1), v_after,
                                           p_dedupe_keys[v_missing], p_max_attempts);
        v_missing := array_position(v_ids, NULL);
    END LOOP;
    RETURN v_ids;
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
-- Leases up to p_limit due queued jobs of the asked kinds (paused kinds skipped) to
-- p_worker for p_lease_seconds, oldest due first, in one statement: FOR UPDATE SKIP
-- LOCKED, so concurrent claimers take disjoint jobs without waiting for each other. Each
-- claimed row gets attempt + 1 and a fresh lease_token, returned with the row.
-- One kind (the common case) reads the due index in order and stops after p_limit rows.
-- Several kinds read the index once per kind (up to p_limit each, in order) and keep the
-- p_limit oldest; the extra rows it locked are released when the claim commits.
DECLARE
    v_kinds  text[];
    -- Lease tokens are md5(secret || job_id): one draw of the strong generator per claim
    -- (not per row) keeps every token unguessable and distinct per job and per claim.
    v_secret text;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_job_claim');
    v_secret := gen_random_uuid()::text;
    IF p_job_kinds IS NULL OR cardinality(p_job_kinds) = 0 THEN
        RAISE EXCEPTION 'fn_job_claim: p_job_kinds required (an array of job kinds)' USING ERRCODE = '22023';
    END IF;
    -- Every argument check in one statement (a claim is the hot path).
    PERFORM fn_iu_require_name('fn_job_claim', 'p_worker', p_worker),
            fn_job_require_range('fn_job_claim', 'the number of p_job_kinds', cardinality(p_job_kinds), 1, 100),
            fn_job_require_range('fn_job_claim', 'p_limit', p_limit, 1, 1000),
            fn_job_require_range('fn_job_claim', 'p_lease_seconds', p_lease_seconds, 1, 86400),
            (SELECT count(fn_iu_require_name('fn_job_claim', 'p_job_kinds', k)) FROM unnest(p_job_kinds) AS k);

    IF cardinality(p_job_kinds) = 1 THEN
        -- One kind: the pause check is part of the claim statement (evaluated once).
        RETURN QUERY
        WITH due AS (
            SELECT j.job_id
              FROM job_queue j
             WHERE j.status = 'queued'
               AND j.job_kind = p_job_kinds[1]
               AND j.process_after <= now()
               AND NOT EXISTS (SELECT 1 FROM job_kind_pause p WHERE p.job_kind = p_job_kinds[1])
             ORDER BY j.process_after, j.job_id
             LIMIT p_limit
               FOR UPDATE SKIP LOCKED
        )
        UPDATE job_queue j
           SET status           = 'running',
               lease_owner      = p_worker,
               lease_expires_at = now() + make_interval(secs => p_lease_seconds),
               lease_token      = md5(v_secret || j.job_id::text)::uuid,
               attempt          = j.attempt + 1,
               updated_at       = now()
          FROM due
         WHERE j.job_id = due.job_id
        RETURNING j.*;
        RETURN;
    END IF;

    v_kinds := ARRAY(SELECT DISTINCT k FROM unnest(p_job_kinds) AS k
                      WHERE NOT EXISTS (SELECT 1 FROM job_kind_pause p WHERE p.job_kind = k));
    IF cardinality(v_kinds) = 0 THEN
        RETURN;
    END IF;

    RETURN QUERY
    WITH due AS (
        SELECT c.job_id
          FROM unnest(v_kinds) AS k(kind)
         CROSS JOIN LATERAL (
               SELECT j.job_id, j.process_after
                 FROM job_queue j
                WHERE j.status = 'queued'
                  AND j.job_kind = k.kind
                  AND j.process_after <= now()
                ORDER BY j.process_after, j.job_id
                LIMIT p_limit
                  FOR UPDATE SKIP LOCKED
         ) c
         ORDER BY c.process_after, c.job_id
         LIMIT p_limit
    )
    UPDATE job_queue j
       SET status           = 'running',
           lease_owner      = p_worker,
           lease_expires_at = now() + make_interval(secs => p_lease_seconds),
           lease_token      = md5(v_secret || j.job_id::text)::uuid,
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
-- Shared by the single-job complete, fail and extend: checks the job id and worker name,
-- locks the job and returns it (P0002 when there is no such job). The caller then applies
-- the lease rule (fn_job_holds_lease).
DECLARE
    v_job job_queue;
BEGIN
    IF p_job_id IS NULL THEN
        RAISE EXCEPTION '%: p_job_id required', p_function USING ERRCODE = '22023';
    END IF;
    PERFORM fn_iu_require_name(p_function, 'p_worker', p_worker);
    SELECT * INTO v_job FROM job_queue WHERE job_id = p_job_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: job % not found', p_function, p_job_id USING ERRCODE = 'P0002';
    END IF;
    RETURN v_job;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_complete_one(p_function text, p_job_id uuid, p_worker text, p_lease_token uuid)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
-- The body of both fn_job_complete forms (p_lease_token NULL: the name-only legacy form).
-- Marks the job succeeded when the caller holds its lease; the token stays on the row so
-- a repeat with that token is answered {"completed": true, "already": true}.
DECLARE
    v_job job_queue := fn_job_lease_row(p_function, p_job_id, p_worker);
BEGIN
    IF NOT coalesce(fn_job_holds_lease(v_job, p_worker, p_lease_token), false) THEN
        IF p_lease_token IS NOT NULL AND v_job.status = 'succeeded' AND v_job.lease_token = p_lease_token THEN
            RETURN jsonb_build_object('completed', true, 'already', true);
        END IF;
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
CREATE FUNCTION fn_job_complete(p_job_id uuid, p_worker text, p_lease_token uuid)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Completes a job the caller holds: fenced by the claim's lease_token (see the lease rule).
-- Returns {"completed": true, ...}, {"completed": true, "already": true} for a repeat of
-- the complete that succeeded, or {"refused": true, "reason": "lease_lost"}.
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_job_complete');
    IF p_lease_token IS NULL THEN
        RAISE EXCEPTION 'fn_job_complete: p_lease_token required' USING ERRCODE = '22023',
            HINT = 'Pass the lease_token fn_job_claim returned with the job.';
    END IF;
    RETURN fn_job_complete_one('fn_job_complete', p_job_id, p_worker, p_lease_token);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_complete(p_job_id uuid, p_worker text)
RETURNS jsonb
LANGUAGE sql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    -- Legacy form, fenced by the worker name only. UNSAFE when worker names are shared (two
    -- sessions, or a restarted worker reusing its name): a stale holder can complete a job
    -- that was re-claimed under the same name. Use the lease_token form.
    SELECT CASE WHEN fn_iu_require_trusted_search_path('fn_job_complete') THEN fn_job_complete_one('fn_job_complete', p_job_id, p_worker, NULL) END
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
CREATE FUNCTION fn_job_error_text(p_error text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    -- What a failure records: the caller's text trimmed and cut to 2,000 characters, or
    -- 'unspecified failure' when blank.
    SELECT left(coalesce(nullif(btrim(p_error), ''), 'unspecified failure'), 2000)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_fail_one(p_function text, p_job_id uuid, p_worker text, p_error text, p_lease_token uuid)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
-- The body of both fn_job_fail forms (p_lease_token NULL: the name-only legacy form).
-- With attempts left the job is queued again after the backoff; at max_attempts it is
-- dead and copied to job_dead_letter.
DECLARE
    v_job     job_queue := fn_job_lease_row(p_function, p_job_id, p_worker);
    v_error   text := fn_job_error_text(p_error);
    v_backoff numeric;
    v_retry   timestamptz;
    v_dl      uuid;
BEGIN
    IF NOT coalesce(fn_job_holds_lease(v_job, p_worker, p_lease_token), false) THEN
        RETURN jsonb_build_object('refused', true, 'reason', 'lease_lost');
    END IF;

    IF v_job.attempt >= v_job.max_attempts THEN
        UPDATE job_queue
           SET status = 'dead', lease_owner = NULL, lease_expires_at = NULL, lease_token = NULL,
               last_error = v_error, finished_at = now(), updated_at = now()
         WHERE job_id = p_job_id;
        v_dl := fn_job_dead_letter_insert(p_job_id);
        RETURN jsonb_build_object('failed', true, 'dead', true, 'job_id', p_job_id, 'status', 'dead',
                                  'attempt', v_job.attempt, 'max_attempts', v_job.max_attempts,
                                  'dead_letter_id', v_dl);
    END IF;

    v_backoff := fn_job_retry_delay(v_job.attempt);
    v_retry   := now() + make_interval(secs => v_backoff);
    UPDATE job_queue
       SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL, lease_token = NULL,
           last_error = v_error, process_after = v_retry, updated_at = now()
     WHERE job_id = p_job_id;
    RETURN jsonb_build_object('failed', true, 'dead', false, 'job_id', p_job_id, 'status', 'queued',
                              'attempt', v_job.attempt, 'max_attempts', v_job.max_attempts,
                              'backoff_seconds', v_backoff, 'retry_at', v_retry);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_fail(p_job_id uuid, p_worker text, p_error text, p_lease_token uuid)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Records a failed attempt of a job the caller holds, fenced by the claim's lease_token.
-- Returns {"failed": true, "dead": false, "backoff_seconds", "retry_at", ...} or, out of
-- attempts, {"failed": true, "dead": true, "dead_letter_id", ...}; a caller without the
-- lease gets {"refused": true, "reason": "lease_lost"}.
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_job_fail');
    IF p_lease_token IS NULL THEN
        RAISE EXCEPTION 'fn_job_fail: p_lease_token required' USING ERRCODE = '22023',
            HINT = 'Pass the lease_token fn_job_claim returned with the job.';
    END IF;
    RETURN fn_job_fail_one('fn_job_fail', p_job_id, p_worker, p_error, p_lease_token);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_fail(p_job_id uuid, p_worker text, p_error text)
RETURNS jsonb
LANGUAGE sql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    -- Legacy form, fenced by the worker name only. UNSAFE when worker names are shared:
    -- use the lease_token form.
    SELECT CASE WHEN fn_iu_require_trusted_search_path('fn_job_fail') THEN fn_job_fail_one('fn_job_fail', p_job_id, p_worker, p_error, NULL) END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_extend_lease(p_job_id uuid, p_worker text, p_lease_token uuid, p_lease_seconds integer DEFAULT 60)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Renews a live lease: lease_expires_at becomes now() + p_lease_seconds, so a job that runs
-- longer than its first lease is not requeued while its worker is alive. Refused
-- ({"refused": true, "reason": "lease_lost"}) when the caller does not hold the lease (an
-- expired lease cannot be revived: the reaper may already have requeued the job).
DECLARE
    v_job job_queue;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_job_extend_lease');
    IF p_lease_token IS NULL THEN
        RAISE EXCEPTION 'fn_job_extend_lease: p_lease_token required' USING ERRCODE = '22023',
            HINT = 'Pass the lease_token fn_job_claim returned with the job.';
    END IF;
    PERFORM fn_job_require_range('fn_job_extend_lease', 'p_lease_seconds', p_lease_seconds, 1, 86400);
    v_job := fn_job_lease_row('fn_job_extend_lease', p_job_id, p_worker);
    IF NOT fn_job_holds_lease(v_job, p_worker, p_lease_token) THEN
        RETURN jsonb_build_object('refused', true, 'reason', 'lease_lost');
    END IF;
    UPDATE job_queue
       SET lease_expires_at = now() + make_interval(secs => p_lease_seconds), updated_at = now()
     WHERE job_id = p_job_id
    RETURNING * INTO v_job;
    RETURN jsonb_build_object('extended', true, 'job_id', p_job_id, 'lease_expires_at', v_job.lease_expires_at,
                              'attempt', v_job.attempt);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_require_batch(p_function text, p_worker text, p_job_ids uuid[], p_lease_tokens uuid[])
RETURNS integer
LANGUAGE plpgsql IMMUTABLE
AS $$
-- The argument check of the batch calls: a worker name, two arrays of the same length
-- (at most 10,000), no NULL element. Returns the length.
BEGIN
    PERFORM fn_iu_require_name(p_function, 'p_worker', p_worker);
    IF p_job_ids IS NULL OR p_lease_tokens IS NULL THEN
        RAISE EXCEPTION '%: p_job_ids and p_lease_tokens required', p_function USING ERRCODE = '22023';
    END IF;
    IF cardinality(p_job_ids) <> cardinality(p_lease_tokens) THEN
        RAISE EXCEPTION '%: % job ids but % lease tokens', p_function, cardinality(p_job_ids), cardinality(p_lease_tokens)
            USING ERRCODE = '22023', HINT = 'Pass each job''s lease_token at the same position as its id.';
    END IF;
    PERFORM fn_job_require_range(p_function, 'the number of jobs', cardinality(p_job_ids), 0, 10000);
    IF array_position(p_job_ids, NULL) IS NOT NULL OR array_position(p_lease_tokens, NULL) IS NOT NULL THEN
        RAISE EXCEPTION '%: p_job_ids and p_lease_tokens must not contain NULL', p_function USING ERRCODE = '22023';
    END IF;
    RETURN cardinality(p_job_ids);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_complete_many(p_worker text, p_job_ids uuid[], p_lease_tokens uuid[])
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Completes a batch in one statement: element i is job p_job_ids[i] with token
-- p_lease_tokens[i]. Each job the caller holds (fn_job_holds_lease) becomes succeeded; a
-- job already succeeded under that same token counts as already (a retried batch); every
-- other element is refused. Returns {"completed": n, "already": n, "refused": n,
-- "refused_jobs": [{"job_id", "reason": "lease_lost" | "not_found"}]}.
DECLARE
    v_out jsonb;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_job_complete_many');
    IF fn_job_require_batch('fn_job_complete_many', p_worker, p_job_ids, p_lease_tokens) = 0 THEN
        RETURN jsonb_build_object('completed', 0, 'already', 0, 'refused', 0, 'refused_jobs', '[]'::jsonb);
    END IF;
    WITH input AS (
        SELECT i.job_id, i.token FROM unnest(p_job_ids, p_lease_tokens) AS i(job_id, token)
    ), done AS (
        UPDATE job_queue j
           SET status = 'succeeded', lease_owner = NULL, lease_expires_at = NULL,
               finished_at = now(), updated_at = now()
          FROM input i
         WHERE j.job_id = i.job_id
           AND fn_job_holds_lease(j, p_worker, i.token)
        RETURNING j.job_id
    ), verdict AS (
        -- Jobs not updated are read as they were before this statement.
        SELECT i.job_id,
               CASE WHEN d.job_id IS NOT NULL THEN 'completed'
                    WHEN o.job_id IS NULL THEN 'not_found'
                    WHEN o.status = 'succeeded' AND o.lease_token = i.token THEN 'already'
                    ELSE 'lease_lost' END AS v
          FROM input i
          LEFT JOIN done d ON d.job_id = i.job_id
          LEFT JOIN job_queue o ON d.job_id IS NULL AND o.job_id = i.job_id
    )
    SELECT jsonb_build_object(
               'completed', count(*) FILTER (WHERE v = 'completed'),
               'already',   count(*) FILTER (WHERE v = 'already'),
               'refused',   count(*) FILTER (WHERE v IN ('lease_lost', 'not_found')),
               'refused_jobs', coalesce(jsonb_agg(jsonb_build_object('job_id', job_id, 'reason', v))
                                        FILTER (WHERE v IN ('lease_lost', 'not_found')), '[]'::jsonb))
      INTO v_out
      FROM verdict;
    RETURN v_out;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_fail_many(p_worker text, p_job_ids uuid[], p_lease_tokens uuid[], p_errors text[] DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Records failed attempts for a batch in one statement: element i is job p_job_ids[i]
-- with token p_lease_tokens[i] and error p_errors[i] (p_errors NULL, or of one element,
-- applies to all). Each job the caller holds is queued again after its backoff, or, out of
-- attempts, is dead and copied to job_dead_letter; every other element is refused.
-- Returns {"failed": n, "retrying": n, "dead": n, "refused": n,
-- "refused_jobs": [{"job_id", "reason": "lease_lost" | "not_found"}]}.
DECLARE
    v_n   integer;
    v_out jsonb;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_job_fail_many');
    v_n := fn_job_require_batch('fn_job_fail_many', p_worker, p_job_ids, p_lease_tokens);
    IF p_errors IS NOT NULL AND cardinality(p_errors) NOT IN (0, 1, v_n) THEN
        RAISE EXCEPTION 'fn_job_fail_many: p_errors has % elements for % jobs', cardinality(p_errors), v_n
            USING ERRCODE = '22023', HINT = 'Pass one error per job, one error for all, or NULL.';
    END IF;
    IF v_n = 0 THEN
        RETURN jsonb_build_object('failed', 0, 'retrying', 0, 'dead', 0, 'refused', 0, 'refused_jobs', '[]'::jsonb);
    END IF;
    WITH input AS (
        SELECT i.job_id, i.token,
               fn_job_error_text(CASE WHEN cardinality(p_errors) = 1 THEN p_errors[1] ELSE p_errors[i.ord] END) AS error
          FROM unnest(p_job_ids, p_lease_tokens) WITH ORDINALITY AS i(job_id, token, ord)
    ), moved AS (
        UPDATE job_queue j
           SET status           = CASE WHEN j.attempt >= j.max_attempts THEN 'dead' ELSE 'queued' END,
               lease_owner      = NULL,
               lease_expires_at = NULL,
               lease_token      = NULL,
               last_error       = i.error,
               process_after    = CASE WHEN j.attempt >= j.max_attempts THEN j.process_after
                                       ELSE now() + make_interval(secs => fn_job_retry_delay(j.attempt)) END,
               finished_at      = CASE WHEN j.attempt >= j.max_attempts THEN now() END,
               updated_at       = now()
          FROM input i
         WHERE j.job_id = i.job_id
           AND fn_job_holds_lease(j, p_worker, i.token)
        RETURNING j.*
    ), dl AS (
        INSERT INTO job_dead_letter (job_id, job_kind, event_domain, job_snapshot, attempts, last_error, last_failed_at)
        SELECT m.job_id, m.job_kind, m.event_domain, to_jsonb(m), m.attempt, m.last_error, now()
          FROM moved m WHERE m.status = 'dead'
        RETURNING job_id
    ), verdict AS (
        SELECT i.job_id,
               CASE WHEN m.status = 'dead' THEN 'dead'
                    WHEN m.status = 'queued' THEN 'retrying'
                    WHEN o.job_id IS NULL THEN 'not_found'
                    ELSE 'lease_lost' END AS v
          FROM input i
          LEFT JOIN moved m ON m.job_id = i.job_id
          LEFT JOIN job_queue o ON m.job_id IS NULL AND o.job_id = i.job_id
    )
    SELECT jsonb_build_object(
               'failed',   count(*) FILTER (WHERE v IN ('dead', 'retrying')),
               'retrying', count(*) FILTER (WHERE v = 'retrying'),
               'dead',     (SELECT count(*) FROM dl),
               'refused',  count(*) FILTER (WHERE v IN ('lease_lost', 'not_found')),
               'refused_jobs', coalesce(jsonb_agg(jsonb_build_object('job_id', job_id, 'reason', v))
                                        FILTER (WHERE v IN ('lease_lost', 'not_found')), '[]'::jsonb))
      INTO v_out
      FROM verdict;
    RETURN v_out;
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
-- otherwise dead and copied to job_dead_letter. The token is cleared, so the late holder's
-- complete, fail or extend is refused. Rows locked by someone else (a holder completing or
-- extending at this moment) are skipped: the next reap sees them.
DECLARE
    v_requeued bigint;
    v_dead     bigint;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_job_reap_expired_leases');
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
               lease_token      = NULL,
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
CREATE FUNCTION fn_job_prune(p_limit integer DEFAULT 10000)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Deletes up to p_limit finished jobs, oldest first, that finished more than
-- queue.job.retention_seconds ago: succeeded ones, and dead ones whose row is already in
-- job_dead_letter (the dead letter keeps the whole job, so nothing is lost). Queued and
-- running jobs and the dead letters themselves are never touched. Retention: a
-- non-negative integer of seconds in dot_config (default 86400 when the key is missing);
-- 0 keeps finished jobs forever; any other value also keeps everything (a typo must not
-- delete) and is reported in "invalid_retention". Rows locked by another session are
-- skipped. Returns {"pruned": n, "retention_seconds": s, "more": true when the limit was
-- reached}; call again (the runner does, on its reap cadence) to go on.
DECLARE
    v_raw    text;
    v_secs   bigint;
    v_pruned bigint;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_job_prune');
    PERFORM fn_job_require_range('fn_job_prune', 'p_limit', p_limit, 1, 1000000);
    SELECT c.value INTO v_raw FROM dot_config c WHERE c.key = 'queue.job.retention_seconds';
    IF NOT FOUND THEN
        v_secs := 86400;
    ELSIF v_raw ~ '^[[:space:]]*[0-9]{1,10}[[:space:]]*$' THEN
        v_secs := btrim(v_raw, E' \t\r\n\f\x0B')::bigint;
    ELSE
        RETURN jsonb_build_object('pruned', 0, 'retention_seconds', NULL, 'invalid_retention', v_raw);
    END IF;
    IF v_secs = 0 THEN
        RETURN jsonb_build_object('pruned', 0, 'retention_seconds', 0, 'more', false);
    END IF;

    WITH victims AS (
        SELECT j.job_id FROM job_queue j
         WHERE j.status IN ('succeeded', 'dead')
           AND j.finished_at < now() - make_interval(secs => v_secs)
           AND (j.status = 'succeeded' OR EXISTS (SELECT 1 FROM job_dead_letter d WHERE d.job_id = j.job_id))
         ORDER BY j.finished_at
         LIMIT p_limit
           FOR UPDATE SKIP LOCKED
    )
    DELETE FROM job_queue j USING victims v WHERE j.job_id = v.job_id;
    GET DIAGNOSTICS v_pruned = ROW_COUNT;
    RETURN jsonb_build_object('pruned', v_pruned, 'retention_seconds', v_secs, 'more', v_pruned >= p_limit);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_kind_pause(p_job_kind text, p_reason text, p_actor text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Pauses a job kind: from the moment this commits, fn_job_claim skips the kind (jobs
-- already running finish or expire as usual; enqueueing goes on). Pausing a paused kind
-- keeps the first pause and says already. Returns {"paused": true, "job_kind", "reason",
-- "paused_by", "paused_at", "already"}.
DECLARE
    v_row     job_kind_pause;
    v_already boolean := false;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_job_kind_pause');
    PERFORM fn_iu_require_name('fn_job_kind_pause', 'p_job_kind', p_job_kind);
    IF coalesce(btrim(p_reason), '') = '' THEN
        RAISE EXCEPTION 'fn_job_kind_pause: p_reason required' USING ERRCODE = '22023',
            HINT = 'Say why, e.g. ''downstream outage, ticket OPS-1''.';
    END IF;
    INSERT INTO job_kind_pause (job_kind, reason, paused_by)
    VALUES (p_job_kind, left(p_reason, 2000), fn_queue_actor(p_actor, 'fn_job_kind_pause'))
    ON CONFLICT (job_kind) DO NOTHING
    RETURNING * INTO v_row;
    IF v_row.job_kind IS NULL THEN
        SELECT * INTO v_row FROM job_kind_pause WHERE job_kind = p_job_kind;
        v_already := true;
    END IF;
    RETURN jsonb_build_object('paused', true, 'job_kind', v_row.job_kind, 'reason', v_row.reason,
                              'paused_by', v_row.paused_by, 'paused_at', v_row.paused_at, 'already', v_already);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_job_kind_resume(p_job_kind text, p_actor text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Resumes a paused job kind: claims take it again. Returns {"resumed": true, "job_kind",
-- "resumed_by", "paused_for_seconds"}, or {"resumed": false, "reason": "not_paused"}.
DECLARE
    v_row job_kind_pause;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_job_kind_resume');
    PERFORM fn_iu_require_name('fn_job_kind_resume', 'p_job_kind', p_job_kind);
    DELETE FROM job_kind_pause WHERE job_kind = p_job_kind RETURNING * INTO v_row;
    IF v_row.job_kind IS NULL THEN
        RETURN jsonb_build_object('resumed', false, 'reason', 'not_paused', 'job_kind', p_job_kind);
    END IF;
    RETURN jsonb_build_object('resumed', true, 'job_kind', p_job_kind, 'resumed_by', fn_queue_actor(p_actor, 'fn_job_kind_resume'),
                              'paused_reason', v_row.reason,
                              'paused_for_seconds', floor(extract(epoch FROM now() - v_row.paused_at))::bigint);
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
    PERFORM fn_iu_require_trusted_search_path('fn_job_dead_letter_replay');
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
       SET resolved_at = now(), resolution = 'replayed', resolved_by = fn_queue_actor(p_actor, 'fn_job_dead_letter_replay'), replayed_job_id = v_new
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
    PERFORM fn_iu_require_trusted_search_path('fn_job_dead_letter_resolve');
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
       SET resolved_at = now(), resolution = p_resolution, resolved_by = fn_queue_actor(p_actor, 'fn_job_dead_letter_resolve')
     WHERE id = v_dl.id
    RETURNING * INTO v_dl;
    RETURN jsonb_build_object('resolved', true, 'dead_letter_id', v_dl.id, 'resolution', v_dl.resolution,
                              'resolved_by', v_dl.resolved_by, 'resolved_at', v_dl.resolved_at);
END;
$$;
-- +goose StatementEnd

INSERT INTO dot_config (key, value, description) VALUES
    ('queue.job.retention_seconds', '86400',
     'Seconds a finished job (succeeded, or dead and copied to job_dead_letter) stays in job_queue before fn_job_prune deletes it. 0 keeps them forever; a non-integer value also keeps everything (fn_job_prune reports it).')
ON CONFLICT (key) DO NOTHING;

REVOKE ALL ON TABLE job_queue, job_dead_letter, job_kind_pause FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_dead_letter_guard() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_new_id() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_require_process_after(text, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_require_range(text, text, integer, integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_holds_lease(job_queue, text, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_retry_delay(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_error_text(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_require_batch(text, text, uuid[], uuid[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_enqueue(text, text, jsonb, timestamptz, text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_enqueue_many(text, text, jsonb, timestamptz, text[], integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_claim(text, text[], integer, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_lease_row(text, uuid, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_complete_one(text, uuid, text, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_complete(uuid, text, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_complete(uuid, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_dead_letter_insert(uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_fail_one(text, uuid, text, text, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_fail(uuid, text, text, uuid) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_fail(uuid, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_extend_lease(uuid, text, uuid, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_complete_many(text, uuid[], uuid[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_fail_many(text, uuid[], uuid[], text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_reap_expired_leases() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_prune(integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_kind_pause(text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_kind_resume(text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_dead_letter_replay(uuid, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_job_dead_letter_resolve(uuid, text, text) FROM PUBLIC;

-- Executors: the worker loop (enqueue, claim, extend, complete, fail, one or many).
GRANT EXECUTE ON FUNCTION fn_job_enqueue(text, text, jsonb, timestamptz, text, integer) TO dot_executor;
GRANT EXECUTE ON FUNCTION fn_job_enqueue_many(text, text, jsonb, timestamptz, text[], integer) TO dot_executor;
GRANT EXECUTE ON FUNCTION fn_job_claim(text, text[], integer, integer) TO dot_executor;
GRANT EXECUTE ON FUNCTION fn_job_complete(uuid, text, uuid) TO dot_executor;
GRANT EXECUTE ON FUNCTION fn_job_complete(uuid, text) TO dot_executor;
GRANT EXECUTE ON FUNCTION fn_job_fail(uuid, text, text, uuid) TO dot_executor;
GRANT EXECUTE ON FUNCTION fn_job_fail(uuid, text, text) TO dot_executor;
GRANT EXECUTE ON FUNCTION fn_job_extend_lease(uuid, text, uuid, integer) TO dot_executor;
GRANT EXECUTE ON FUNCTION fn_job_complete_many(text, uuid[], uuid[]) TO dot_executor;
GRANT EXECUTE ON FUNCTION fn_job_fail_many(text, uuid[], uuid[], text[]) TO dot_executor;
-- Operators: housekeeping that changes what every executor sees (reap, prune, pause,
-- resume) and the dead letters.
GRANT EXECUTE ON FUNCTION fn_job_reap_expired_leases() TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_job_prune(integer) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_job_kind_pause(text, text, text) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_job_kind_resume(text, text) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_job_dead_letter_replay(uuid, text) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_job_dead_letter_resolve(uuid, text, text) TO workflow_admin;

-- +goose Down
DELETE FROM dot_config WHERE key = 'queue.job.retention_seconds';
DROP FUNCTION fn_job_dead_letter_resolve(uuid, text, text);
DROP FUNCTION fn_job_dead_letter_replay(uuid, text);
DROP FUNCTION fn_job_kind_resume(text, text);
DROP FUNCTION fn_job_kind_pause(text, text, text);
DROP FUNCTION fn_job_prune(integer);
DROP FUNCTION fn_job_reap_expired_leases();
DROP FUNCTION fn_job_fail_many(text, uuid[], uuid[], text[]);
DROP FUNCTION fn_job_complete_many(text, uuid[], uuid[]);
DROP FUNCTION fn_job_require_batch(text, text, uuid[], uuid[]);
DROP FUNCTION fn_job_extend_lease(uuid, text, uuid, integer);
DROP FUNCTION fn_job_fail(uuid, text, text);
DROP FUNCTION fn_job_fail(uuid, text, text, uuid);
DROP FUNCTION fn_job_fail_one(text, uuid, text, text, uuid);
DROP FUNCTION fn_job_error_text(text);
DROP FUNCTION fn_job_dead_letter_insert(uuid);
DROP FUNCTION fn_job_complete(uuid, text);
DROP FUNCTION fn_job_complete(uuid, text, uuid);
DROP FUNCTION fn_job_complete_one(text, uuid, text, uuid);
DROP FUNCTION fn_job_lease_row(text, uuid, text);
DROP FUNCTION fn_job_claim(text, text[], integer, integer);
DROP FUNCTION fn_job_enqueue_many(text, text, jsonb, timestamptz, text[], integer);
DROP FUNCTION fn_job_enqueue(text, text, jsonb, timestamptz, text, integer);
DROP FUNCTION fn_job_retry_delay(integer);
DROP FUNCTION fn_job_holds_lease(job_queue, text, uuid);
DROP FUNCTION fn_job_require_range(text, text, integer, integer, integer);
DROP FUNCTION fn_job_require_process_after(text, timestamptz);
DROP TABLE job_kind_pause;
DROP TABLE job_dead_letter;
DROP FUNCTION fn_job_dead_letter_guard();
DROP TABLE job_queue;
DROP FUNCTION fn_job_new_id();
