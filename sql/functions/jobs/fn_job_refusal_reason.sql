CREATE OR REPLACE FUNCTION iu_core.fn_job_refusal_reason(p_job public.job_queue, p_worker text, p_lease_token uuid)
RETURNS text
LANGUAGE sql STABLE
AS $$
    -- Why a single-job complete or fail is refused: another_login when a name-only call
    -- (no token) comes from another login than the one that claimed the live lease under
    -- that name, lease_lost otherwise (expired, re-claimed, finished, another name or token).
    SELECT CASE WHEN p_lease_token IS NULL AND p_job.status = 'running' AND p_job.lease_owner = p_worker
                     AND p_job.lease_expires_at > now()
                     AND p_job.lease_session_user IS DISTINCT FROM session_user
                THEN 'another_login' ELSE 'lease_lost' END
$$;
