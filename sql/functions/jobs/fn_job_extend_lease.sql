CREATE OR REPLACE FUNCTION public.fn_job_extend_lease(p_job_id uuid, p_worker text, p_lease_token uuid, p_lease_seconds integer DEFAULT 60)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
-- Renews a live lease: lease_expires_at becomes now() + p_lease_seconds, so a job that runs
-- longer than its first lease is not requeued while its worker is alive; but never later
-- than iu_core.fn_job_max_lease_seconds() (24 h) after the claim: a lease cannot be kept
-- forever ("capped": true says the expiry stopped there, "lease_ends_by" when). Refused
-- ({"refused": true, "reason": "lease_lost"}) when the caller does not hold the lease (an
-- expired lease cannot be revived: the reaper may already have requeued the job).
DECLARE
    v_job    public.job_queue;
    v_ends   timestamptz;
    v_wanted timestamptz;
BEGIN
    IF p_lease_token IS NULL THEN
        RAISE EXCEPTION 'fn_job_extend_lease: p_lease_token required' USING ERRCODE = '22023',
            HINT = 'Pass the lease_token fn_job_claim returned with the job.';
    END IF;
    PERFORM iu_core.fn_job_require_range('fn_job_extend_lease', 'p_lease_seconds', p_lease_seconds, 1, 86400);
    v_job := iu_core.fn_job_lease_row('fn_job_extend_lease', p_job_id, p_worker, p_lease_token);
    IF NOT iu_core.fn_job_holds_lease(v_job, p_worker, p_lease_token) THEN
        RETURN jsonb_build_object('refused', true, 'reason', 'lease_lost');
    END IF;
    v_wanted := now() + make_interval(secs => p_lease_seconds);
    v_ends := coalesce(v_job.leased_at, v_job.lease_expires_at) + make_interval(secs => iu_core.fn_job_max_lease_seconds());
    UPDATE public.job_queue
       SET lease_expires_at = greatest(lease_expires_at, least(v_wanted, v_ends)), updated_at = now()
     WHERE job_id = p_job_id
    RETURNING * INTO v_job;
    RETURN jsonb_build_object('extended', true, 'job_id', p_job_id, 'lease_expires_at', v_job.lease_expires_at,
                              'attempt', v_job.attempt, 'capped', v_wanted > v_ends, 'lease_ends_by', v_ends);
END;
$$;
