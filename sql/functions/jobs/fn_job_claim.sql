CREATE OR REPLACE FUNCTION public.fn_job_claim(p_worker text, p_job_kinds text[], p_limit integer DEFAULT 1, p_lease_seconds integer DEFAULT 60)
RETURNS SETOF public.job_queue
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
-- The claim statement is planned once per session and kept. Under "auto" it was planned
-- again on every call (~690 k instructions of a one-job claim's ~1,370 k): a generic plan's
-- LIMIT is costed at a tenth of the backlog, so the custom plan always looked cheaper,
-- though both are the same plan (the due index read in order, then each claimed job by its
-- key). The setting holds for the checks it calls. A small job_queue is planned per call
-- (see the size check below).
SET plan_cache_mode = force_generic_plan
AS $$
-- Leases up to p_limit due queued jobs of the asked kinds (paused kinds skipped) to
-- p_worker for p_lease_seconds, oldest due first, in one statement: FOR UPDATE SKIP
-- LOCKED, so concurrent claimers take disjoint jobs without waiting for each other. Each
-- claimed row gets attempt + 1 and a fresh lease_token, returned with the row, and records
-- when the lease began and the login that took it (leased_at, lease_session_user).
-- One kind (the common case) reads the due index in order and stops after p_limit rows.
-- Several kinds read the index once per kind (up to p_limit each, in order) and keep the
-- p_limit oldest; the extra rows it locked are released when the claim commits.
-- The claimed rows are then updated through their key (job_queue_pkey), one lookup each,
-- from the array of the ids picked, unnested in the order picked (rows come back oldest due
-- first). Joined to the picking CTE instead, a kept plan estimates a tenth of the backlog
-- on that side and reads all of job_queue to find them: a hash join over a seq scan with
-- 20,000 due jobs of one kind, a merge join along the whole primary key with a million. An
-- array's elements are always estimated at 10.
DECLARE
    v_kinds  text[];
    -- Lease tokens are md5(secret || job_id): one draw of the strong generator per claim
    -- (not per row) keeps every token unguessable and distinct per job and per claim.
    v_secret text;
    -- What every claimed row gets alike, computed once per claim rather than once per row
    -- (now() is the transaction's; the login is the session's): ~750 instructions a row.
    v_expires timestamptz;
    v_user    text;
BEGIN
    v_secret := gen_random_uuid()::text;
    IF p_job_kinds IS NULL OR cardinality(p_job_kinds) = 0 THEN
        RAISE EXCEPTION 'fn_job_claim: p_job_kinds required (an array of job kinds)' USING ERRCODE = '22023';
    END IF;
    -- Every argument check in one statement (a claim is the hot path).
    PERFORM iu_core.fn_iu_require_name('fn_job_claim', 'p_worker', p_worker),
            iu_core.fn_iu_require_vector('fn_job_claim', 'p_job_kinds', p_job_kinds),
            iu_core.fn_job_require_range('fn_job_claim', 'the number of p_job_kinds', cardinality(p_job_kinds), 1, 100),
            iu_core.fn_job_require_range('fn_job_claim', 'p_limit', p_limit, 1, 1000),
            iu_core.fn_job_require_range('fn_job_claim', 'p_lease_seconds', p_lease_seconds, 1, 86400),
            (SELECT count(iu_core.fn_iu_require_name('fn_job_claim', 'p_job_kinds', k)) FROM unnest(p_job_kinds) AS k);
    -- A plan is made for job_queue's size at the time (its file's length), and a kept plan
    -- stays until the table is next analyzed or vacuumed. Below ~55 pages a whole-table scan
    -- costs less than the key lookups, so a plan made then scans the table; kept, it goes on
    -- scanning it after a burst of enqueues ("auto" kept such a plan too, from the sixth
    -- claim: 40-80 ms a claim at 200,000 jobs, planned at 50). So while job_queue is under
    -- 1 MiB (128 pages) the claim is planned per call. SET LOCAL inside a function with its
    -- own SET of the parameter ends when the function returns.
    IF pg_catalog.pg_relation_size('public.job_queue'::pg_catalog.regclass) < 1048576 THEN
        PERFORM pg_catalog.set_config('plan_cache_mode', 'force_custom_plan', true);
    END IF;

    v_expires := now() + make_interval(secs => p_lease_seconds);
    v_user := session_user;

    IF cardinality(p_job_kinds) = 1 THEN
        -- One kind: the pause check is part of the claim statement (evaluated once).
        RETURN QUERY
        WITH due AS (
            SELECT j.job_id
              FROM public.job_queue j
             WHERE j.status = 'queued'
               AND j.job_kind = p_job_kinds[1]
               AND j.process_after <= now()
               AND NOT EXISTS (SELECT 1 FROM public.job_kind_pause p WHERE p.job_kind = p_job_kinds[1])
             ORDER BY j.process_after, j.job_id
             LIMIT p_limit
               FOR UPDATE SKIP LOCKED
        )
        UPDATE public.job_queue j
           SET status           = 'running',
               lease_owner      = p_worker,
               lease_expires_at = v_expires,
               lease_token      = md5(v_secret || j.job_id::text)::uuid,
               leased_at        = now(),
               lease_session_user = v_user,
               attempt          = j.attempt + 1,
               updated_at       = now()
          FROM unnest(ARRAY(SELECT d.job_id FROM due d)) AS c(job_id)
         WHERE j.job_id = c.job_id
        RETURNING j.*;
        RETURN;
    END IF;

    v_kinds := ARRAY(SELECT DISTINCT k FROM unnest(p_job_kinds) AS k
                      WHERE NOT EXISTS (SELECT 1 FROM public.job_kind_pause p WHERE p.job_kind = k));
    IF cardinality(v_kinds) = 0 THEN
        RETURN;
    END IF;

    RETURN QUERY
    WITH due AS (
        SELECT c.job_id
          FROM unnest(v_kinds) AS k(kind)
         CROSS JOIN LATERAL (
               SELECT j.job_id, j.process_after
                 FROM public.job_queue j
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
    UPDATE public.job_queue j
       SET status           = 'running',
           lease_owner      = p_worker,
           lease_expires_at = v_expires,
           lease_token      = md5(v_secret || j.job_id::text)::uuid,
           leased_at        = now(),
           lease_session_user = v_user,
           attempt          = j.attempt + 1,
           updated_at       = now()
      FROM unnest(ARRAY(SELECT d.job_id FROM due d)) AS c(job_id)
     WHERE j.job_id = c.job_id
    RETURNING j.*;
END;
$$;
