CREATE OR REPLACE FUNCTION iu_core.fn_job_complete_one(p_function text, p_job_id uuid, p_worker text, p_lease_token uuid)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
-- The body of both fn_job_complete forms (p_lease_token NULL: the name-only legacy form).
-- Marks the job succeeded when the caller holds its lease; the token stays on the row so
-- a repeat with that token is answered {"completed": true, "already": true}.
DECLARE
    v_job public.job_queue := iu_core.fn_job_lease_row(p_function, p_job_id, p_worker, p_lease_token);
BEGIN
    IF NOT coalesce(iu_core.fn_job_holds_lease(v_job, p_worker, p_lease_token), false) THEN
        IF p_lease_token IS NOT NULL AND v_job.status = 'succeeded' AND v_job.lease_token = p_lease_token THEN
            RETURN jsonb_build_object('completed', true, 'already', true);
        END IF;
        RETURN jsonb_build_object('refused', true, 'reason', iu_core.fn_job_refusal_reason(v_job, p_worker, p_lease_token));
    END IF;
    UPDATE public.job_queue
       SET status = 'succeeded', lease_owner = NULL, lease_expires_at = NULL,
           finished_at = now(), updated_at = now()
     WHERE job_id = p_job_id;
    RETURN jsonb_build_object('completed', true, 'job_id', p_job_id, 'status', 'succeeded',
                              'attempt', v_job.attempt, 'worker', p_worker);
END;
$$;
