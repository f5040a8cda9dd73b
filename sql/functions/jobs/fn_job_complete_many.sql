CREATE OR REPLACE FUNCTION public.fn_job_complete_many(p_worker text, p_job_ids uuid[], p_lease_tokens uuid[])
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
-- Completes a batch in one statement: element i is job p_job_ids[i] with token
-- p_lease_tokens[i]. Each job the caller holds (fn_job_holds_lease) becomes succeeded; a
-- job already succeeded under that same token counts as already (a retried batch); every
-- other element is refused. Returns {"completed": n, "already": n, "refused": n,
-- "refused_jobs": [{"job_id", "reason": "lease_lost" | "not_found"}]}.
DECLARE
    v_out jsonb;
BEGIN
    IF iu_core.fn_job_require_batch('fn_job_complete_many', p_worker, p_job_ids, p_lease_tokens) = 0 THEN
        RETURN jsonb_build_object('completed', 0, 'already', 0, 'refused', 0, 'refused_jobs', '[]'::jsonb);
    END IF;
    WITH input AS (
        SELECT i.job_id, i.token FROM unnest(p_job_ids, p_lease_tokens) AS i(job_id, token)
    ), done AS (
        UPDATE public.job_queue j
           SET status = 'succeeded', lease_owner = NULL, lease_expires_at = NULL,
               finished_at = now(), updated_at = now()
          FROM input i
         WHERE j.job_id = i.job_id
           AND iu_core.fn_job_holds_lease(j, p_worker, i.token)
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
          LEFT JOIN public.job_queue o ON d.job_id IS NULL AND o.job_id = i.job_id
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
