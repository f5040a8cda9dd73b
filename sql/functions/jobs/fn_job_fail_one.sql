CREATE OR REPLACE FUNCTION iu_core.fn_job_fail_one(p_function text, p_job_id uuid, p_worker text, p_error text, p_lease_token uuid)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
-- The body of both fn_job_fail forms (p_lease_token NULL: the name-only legacy form).
-- With attempts left the job is queued again after the backoff; at max_attempts it is
-- dead and copied to job_dead_letter. The failed claim's token stays on the row until the
-- next claim replaces it, so a repeat with that token (a retry after a lost answer) is
-- answered {"failed": true, "already": true}, as a repeated complete is; a lease that ran
-- out is reaped with its token cleared, so a fail after that is still lease_lost.
DECLARE
    v_job     public.job_queue := iu_core.fn_job_lease_row(p_function, p_job_id, p_worker, p_lease_token);
    v_error   text := iu_core.fn_job_error_text(p_error);
    v_backoff numeric;
    v_retry   timestamptz;
    v_dl      uuid;
BEGIN
    IF NOT coalesce(iu_core.fn_job_holds_lease(v_job, p_worker, p_lease_token), false) THEN
        IF p_lease_token IS NOT NULL AND v_job.status IN ('queued', 'dead') AND v_job.lease_token = p_lease_token THEN
            RETURN jsonb_build_object('failed', true, 'already', true, 'job_id', p_job_id, 'status', v_job.status);
        END IF;
        RETURN jsonb_build_object('refused', true, 'reason', iu_core.fn_job_refusal_reason(v_job, p_worker, p_lease_token));
    END IF;

    IF v_job.attempt >= v_job.max_attempts THEN
        UPDATE public.job_queue
           SET status = 'dead', lease_owner = NULL, lease_expires_at = NULL,
               last_error = v_error, finished_at = now(), updated_at = now()
         WHERE job_id = p_job_id;
        v_dl := iu_core.fn_job_dead_letter_insert(p_job_id);
        RETURN jsonb_build_object('failed', true, 'dead', true, 'job_id', p_job_id, 'status', 'dead',
                                  'attempt', v_job.attempt, 'max_attempts', v_job.max_attempts,
                                  'dead_letter_id', v_dl);
    END IF;

    v_backoff := iu_core.fn_job_retry_delay(v_job.attempt);
    v_retry   := now() + make_interval(secs => v_backoff);
    UPDATE public.job_queue
       SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL,
           last_error = v_error, process_after = v_retry, updated_at = now()
     WHERE job_id = p_job_id;
    RETURN jsonb_build_object('failed', true, 'dead', false, 'job_id', p_job_id, 'status', 'queued',
                              'attempt', v_job.attempt, 'max_attempts', v_job.max_attempts,
                              'backoff_seconds', v_backoff, 'retry_at', v_retry);
END;
$$;
