CREATE OR REPLACE FUNCTION public.fn_job_enqueue(
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
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
-- Enqueues one job and returns its id; a live job (queued or running) of the same kind and
-- domain with the same dedupe key is returned instead of a duplicate. A NULL payload is {}, a NULL process_after now; a
-- process_after in the past is stored as now (claims take the oldest process_after first, so
-- a past time would put the job ahead of every job already waiting: any executor could jump
-- or starve the queue).
-- Refuses (22023, nothing written), in this order: a blank or over-long kind or domain, a
-- payload that is not a clean JSON object, a process_after that is infinite or more than a
-- year ahead, max_attempts outside 1..100, a blank or over-long dedupe key, a keyed job due
-- more than the dedupe horizon (24 h) ahead. Refuses (23505, nothing written) a dedupe key a
-- live job of another kind or domain holds (fn_job_dedupe_refuse_other: a key is one key
-- across every kind and domain while its job is live; that job is not the caller's).
--
-- Why it is written this way: it is called once per job, often many times in one statement
-- (a trigger, an INSERT ... SELECT over orders), so what it costs per call is what matters.
-- Every statement PL/pgSQL runs is an executor start; every rule a statement names is
-- prepared again for each call (a plain INSERT of many rows prepares it once). So:
--   * the argument rules are one condition (its plan is kept for the session), and only
--     when it fails are they walked one by one, in the order above, to raise the first
--     broken rule's own error;
--   * the arguments are then copied into variables of job_queue's column domains (016), and
--     a value already of the column's domain is not checked again by the INSERT, which
--     therefore prepares none of the single-column rules; the domains' checks run in the
--     copy, whose cast PL/pgSQL keeps for the transaction. The copies are declared in a
--     block of their own, entered only once the condition holds: a domain variable declared
--     without a value is checked against NULL on every call (~1,500 instructions for four);
--   * payload hygiene, the costliest rule, is tested in that copy only: a dirty payload
--     breaks job_queue_payload_hygiene, whose refusing branch
--     (iu_core.fn_iu_event_outbox_refuse_payload, 018) raises this function's own error,
--     told by the call stack that this function's copy is the writer. (It was a
--     subtransaction, BEGIN ... EXCEPTION around the copy: ~6,000 instructions a call.
--     Testing hygiene in the condition instead runs the rule twice.)
--   * the two rules over several columns (job_queue_lease_ck, job_queue_token_ck) live in
--     a domain over the lease columns (018), cast by the predicate of the index
--     job_queue_lease_rules, which every written row is tested against and none enters
--     (023): a table CHECK's expression is parsed from its text and planned again for every
--     call (the two CHECKs were ~60,000 instructions a call, 018's one CHECK casting to the
--     domain ~36,000), an index's predicate is kept parsed (the index and the cast in its
--     predicate, ~21,000). What remains of the INSERT's cost
--     per call is PostgreSQL's executor set up for one row: the 18-column projection, six
--     indexes opened and closed, the five partial index predicates prepared
--     (bench/README.md, "The single enqueue against a plain INSERT");
--   * the id and the timestamps are drawn here, not by the column defaults, which the
--     INSERT would prepare for every call;
--   * without a dedupe key the INSERT is a plain one: no conflict can arise, and ON CONFLICT
--     would make it a speculative insertion (a probe, a token lock, a second WAL record).
-- It pins lock_timeout although it is a producer, unlike fn_iu_emit_event: with a dedupe
-- key its INSERT waits for any other transaction that inserted a live job of the same key
-- and has not ended (the conflict is decided when it commits or rolls back), a caller's open
-- transaction that must not hold it for as long as it pleases.
DECLARE
    v_id      uuid        := iu_core.fn_job_new_id();
    v_now     timestamptz := now();
    v_after   timestamptz := greatest(p_process_after, now());   -- NULL or past: now
    v_live    uuid;
    v_mine    boolean;            -- the live job is of the caller's kind and domain
BEGIN
    -- The accepting path: true exactly when every rule below holds (NULL fails it).
    IF NOT coalesce(NOT iu_core.fn_iu_is_whitespace(p_job_kind) AND octet_length(p_job_kind) <= 200
                    AND NOT iu_core.fn_iu_is_whitespace(p_event_domain) AND octet_length(p_event_domain) <= 200
                    AND jsonb_typeof(coalesce(p_payload, '{}'::jsonb)) = 'object'
                    AND (p_process_after IS NULL
                         OR (isfinite(p_process_after) AND p_process_after <= now() + interval '1 year'))
                    AND p_max_attempts BETWEEN 1 AND 100
                    AND (p_dedupe_key IS NULL
                         OR (NOT iu_core.fn_iu_is_whitespace(p_dedupe_key) AND octet_length(p_dedupe_key) <= 200
                             AND v_after <= now() + make_interval(secs => iu_core.fn_job_dedupe_horizon_seconds()))),
                    false) THEN
        -- Something is wrong: the rules one by one, each raising its own error.
        PERFORM iu_core.fn_iu_require_name('fn_job_enqueue', 'p_job_kind', p_job_kind);
        PERFORM iu_core.fn_iu_require_name('fn_job_enqueue', 'p_event_domain', p_event_domain);
        PERFORM iu_core.fn_iu_payload_require_clean('fn_job_enqueue', 'p_payload', coalesce(p_payload, '{}'::jsonb));
        PERFORM iu_core.fn_job_require_process_after('fn_job_enqueue', p_process_after);
        PERFORM iu_core.fn_job_require_range('fn_job_enqueue', 'p_max_attempts', p_max_attempts, 1, 100);
        IF p_dedupe_key IS NOT NULL THEN
            PERFORM iu_core.fn_iu_require_name('fn_job_enqueue', 'p_dedupe_key', p_dedupe_key);
            PERFORM iu_core.fn_job_require_dedupe_horizon('fn_job_enqueue', v_after);
        END IF;
    END IF;

    DECLARE
        -- The arguments as job_queue's column domains: checked here, not again by the INSERT.
        -- Only p_payload can be refused here (hygiene, with this function's own error: see
        -- above); the condition already holds the others to stricter rules than the domains'.
        -- The payload's copy must stay here, in this function's own frame: that frame is the
        -- sign the refusing branch reads (a copy in a helper would get the domain's 23514).
        v_kind    iu_core.iu_job_kind         := p_job_kind;
        v_domain  iu_core.iu_job_domain       := p_event_domain;
        v_payload iu_core.iu_job_payload      := coalesce(p_payload, '{}'::jsonb);
        v_max     iu_core.iu_job_max_attempts := p_max_attempts;
        v_status  iu_core.iu_job_status       := 'queued';
        v_attempt iu_core.iu_job_attempt      := 0;
    BEGIN
        IF p_dedupe_key IS NULL THEN
            INSERT INTO public.job_queue (job_id, job_kind, event_domain, status, payload, process_after, enqueued_at,
                                          attempt, max_attempts, updated_at)
            VALUES (v_id, v_kind, v_domain, v_status, v_payload, v_after, v_now, v_attempt, v_max, v_now);
            RETURN v_id;
        END IF;

        -- The loop covers the race where the live job finishes between the conflict and the lookup.
        LOOP
            INSERT INTO public.job_queue (job_id, job_kind, event_domain, status, payload, process_after, enqueued_at,
                                          attempt, max_attempts, updated_at, dedupe_key)
            VALUES (v_id, v_kind, v_domain, v_status, v_payload, v_after, v_now, v_attempt, v_max, v_now, p_dedupe_key)
            ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL AND status IN ('queued', 'running') DO NOTHING;
            IF FOUND THEN
                RETURN v_id;
            END IF;
            SELECT j.job_id, j.job_kind = p_job_kind AND j.event_domain = p_event_domain INTO v_live, v_mine FROM public.job_queue j
             WHERE j.dedupe_key = p_dedupe_key AND j.status IN ('queued', 'running');
            IF v_live IS NOT NULL THEN
                -- The caller's job only when it is of the caller's kind and domain.
                IF NOT v_mine THEN
                    PERFORM iu_core.fn_job_dedupe_refuse_other('fn_job_enqueue', p_dedupe_key, p_job_kind, p_event_domain);
                END IF;
                RETURN v_live;
            END IF;
        END LOOP;
    END;
END;
$$;
