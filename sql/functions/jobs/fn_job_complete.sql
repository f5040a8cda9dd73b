CREATE OR REPLACE FUNCTION public.fn_job_complete(p_job_id uuid, p_worker text, p_lease_token uuid)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
-- Completes a job the caller holds: fenced by the claim's lease_token (see the lease rule).
-- Returns {"completed": true, ...}, {"completed": true, "already": true} for a repeat of
-- the complete that succeeded, or {"refused": true, "reason": "lease_lost"}.
BEGIN
    IF p_lease_token IS NULL THEN
        RAISE EXCEPTION 'fn_job_complete: p_lease_token required' USING ERRCODE = '22023',
            HINT = 'Pass the lease_token fn_job_claim returned with the job.';
    END IF;
    RETURN iu_core.fn_job_complete_one('fn_job_complete', p_job_id, p_worker, p_lease_token);
END;
$$;

CREATE OR REPLACE FUNCTION public.fn_job_complete(p_job_id uuid, p_worker text)
RETURNS jsonb
LANGUAGE sql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
    -- Legacy form, fenced by the worker name only. UNSAFE when worker names are shared (two
    -- sessions, or a restarted worker reusing its name): a stale holder can complete a job
    -- that was re-claimed under the same name. Use the lease_token form.
    SELECT iu_core.fn_job_complete_one('fn_job_complete', p_job_id, p_worker, NULL)
$$;
