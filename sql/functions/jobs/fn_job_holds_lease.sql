CREATE OR REPLACE FUNCTION iu_core.fn_job_holds_lease(p_job public.job_queue, p_worker text, p_lease_token uuid)
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    -- The lease rule, written once: the job is running, leased to this worker name, the
    -- lease has not expired, and the token is the current claim's; the name-only legacy
    -- forms pass no token (NULL), and then the login must be the one that claimed it
    -- (session_user, not current_user, which is the owner inside these definer functions):
    -- a worker name is a claim anyone can make, a login is not. No SET clause, so the
    -- planner inlines it into the batch UPDATEs; it touches no table.
    SELECT p_job.status = 'running'
       AND p_job.lease_owner = p_worker
       AND p_job.lease_expires_at > now()
       AND CASE WHEN p_lease_token IS NULL THEN p_job.lease_session_user = session_user
                ELSE p_job.lease_token = p_lease_token END
$$;
