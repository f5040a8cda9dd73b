CREATE OR REPLACE FUNCTION iu_core.fn_job_holds_lease(p_job public.job_queue, p_worker text, p_lease_token uuid)
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
