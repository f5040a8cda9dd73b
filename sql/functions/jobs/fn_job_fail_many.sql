CREATE OR REPLACE FUNCTION public.fn_job_fail_many(p_worker text, p_job_ids uuid[], p_lease_tokens uuid[], p_errors text[] DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
-- Records failed attempts for a batch in one statement: element i is job p_job_ids[i]
-- with token p_lease_tokens[i] and error p_errors[i] (p_errors NULL, or of one element,
-- applies to all). Each job the caller holds is queued again after its backoff, or, out of
-- attempts, is dead and copied to job_dead_letter; every other element is refused.
-- A job already failed under that same token (a retried batch) counts as already: the
-- failed claim's token stays on the row until the next claim (fn_job_fail_one).
-- Returns {"failed": n, "retrying": n, "dead": n, "already": n, "refused": n,
-- "refused_jobs": [{"job_id", "reason": "lease_lost" | "not_found"}]}.
DECLARE
    v_n   integer;
    v_out jsonb;
BEGIN
    v_n := iu_core.fn_job_require_batch('fn_job_fail_many', p_worker, p_job_ids, p_lease_tokens);
    PERFORM iu_core.fn_iu_require_vector('fn_job_fail_many', 'p_errors', p_errors);
    IF p_errors IS NOT NULL AND cardinality(p_errors) NOT IN (0, 1, v_n) THEN
        RAISE EXCEPTION 'fn_job_fail_many: p_errors has % elements for % jobs', cardinality(p_errors), v_n
            USING ERRCODE = '22023', HINT = 'Pass one error per job, one error for all, or NULL.';
    END IF;
    IF v_n = 0 THEN
        RETURN jsonb_build_object('failed', 0, 'retrying', 0, 'dead', 0, 'already', 0, 'refused', 0, 'refused_jobs', '[]'::jsonb);
    END IF;
    WITH input AS (
        SELECT i.job_id, i.token,
               iu_core.fn_job_error_text(CASE WHEN cardinality(p_errors) = 1 THEN p_errors[1] ELSE p_errors[i.ord] END) AS error
          FROM unnest(p_job_ids, p_lease_tokens) WITH ORDINALITY AS i(job_id, token, ord)
    ), moved AS (
        UPDATE public.job_queue j
           SET status           = CASE WHEN j.attempt >= j.max_attempts THEN 'dead' ELSE 'queued' END,
               lease_owner      = NULL,
               lease_expires_at = NULL,
               last_error       = i.error,
               process_after    = CASE WHEN j.attempt >= j.max_attempts THEN j.process_after
                                       ELSE now() + make_interval(secs => iu_core.fn_job_retry_delay(j.attempt)) END,
               finished_at      = CASE WHEN j.attempt >= j.max_attempts THEN now() END,
               updated_at       = now()
          FROM input i
         WHERE j.job_id = i.job_id
           AND iu_core.fn_job_holds_lease(j, p_worker, i.token)
        RETURNING j.*
    ), dl AS (
        INSERT INTO public.job_dead_letter (job_id, job_kind, event_domain, job_snapshot, attempts, last_error, last_failed_at)
        SELECT m.job_id, m.job_kind, m.event_domain, to_jsonb(m), m.attempt, m.last_error, now()
          FROM moved m WHERE m.status = 'dead'
        RETURNING job_id
    ), verdict AS (
        SELECT i.job_id,
               CASE WHEN m.status = 'dead' THEN 'dead'
                    WHEN m.status = 'queued' THEN 'retrying'
                    WHEN o.job_id IS NULL THEN 'not_found'
                    WHEN o.status IN ('queued', 'dead') AND o.lease_token = i.token THEN 'already'
                    ELSE 'lease_lost' END AS v
          FROM input i
          LEFT JOIN moved m ON m.job_id = i.job_id
          LEFT JOIN public.job_queue o ON m.job_id IS NULL AND o.job_id = i.job_id
    )
    SELECT jsonb_build_object(
               'failed',   count(*) FILTER (WHERE v IN ('dead', 'retrying')),
               'retrying', count(*) FILTER (WHERE v = 'retrying'),
               'dead',     (SELECT count(*) FROM dl),
               'already',  count(*) FILTER (WHERE v = 'already'),
               'refused',  count(*) FILTER (WHERE v IN ('lease_lost', 'not_found')),
               'refused_jobs', coalesce(jsonb_agg(jsonb_build_object('job_id', job_id, 'reason', v))
                                        FILTER (WHERE v IN ('lease_lost', 'not_found')), '[]'::jsonb))
      INTO v_out
      FROM verdict;
    RETURN v_out;
END;
$$;
