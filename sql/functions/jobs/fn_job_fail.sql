CREATE OR REPLACE FUNCTION public.fn_job_fail(p_job_id uuid, p_worker text, p_error text, p_lease_token uuid)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
-- Records a failed attempt of a job the caller holds, fenced by the claim's lease_token.
-- Returns {"failed": true, "dead": false, "backoff_seconds", "retry_at", ...} or, out of
-- attempts, {"failed": true, "dead": true, "dead_letter_id", ...}; a caller without the
-- lease gets {"refused": true, "reason": "lease_lost"}.
BEGIN
    IF p_lease_token IS NULL THEN
        RAISE EXCEPTION 'fn_job_fail: p_lease_token required' USING ERRCODE = '22023',
            HINT = 'Pass the lease_token fn_job_claim returned with the job.';
    END IF;
    RETURN iu_core.fn_job_fail_one('fn_job_fail', p_job_id, p_worker, p_error, p_lease_token);
END;
$$;

CREATE OR REPLACE FUNCTION public.fn_job_fail(p_job_id uuid, p_worker text, p_error text)
RETURNS jsonb
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
    -- Legacy form, fenced by the worker name only. UNSAFE when worker names are shared:
    -- use the lease_token form.
    SELECT iu_core.fn_job_fail_one('fn_job_fail', p_job_id, p_worker, p_error, NULL)
$$;
