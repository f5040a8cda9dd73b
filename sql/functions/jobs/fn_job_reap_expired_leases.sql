CREATE OR REPLACE FUNCTION public.fn_job_reap_expired_leases()
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
-- Running jobs whose lease expired: back to queued (due at once) while attempts remain,
-- otherwise dead and copied to job_dead_letter. The token is cleared, so the late holder's
-- complete, fail or extend is refused. Rows locked by someone else (a holder completing or
-- extending at this moment) are skipped: the next reap sees them.
DECLARE
    v_requeued bigint;
    v_dead     bigint;
BEGIN
    WITH expired AS (
        SELECT j.job_id FROM public.job_queue j
         WHERE j.status = 'running' AND j.lease_expires_at <= now()
           FOR UPDATE SKIP LOCKED
    ), moved AS (
        UPDATE public.job_queue j
           SET status           = CASE WHEN j.attempt >= j.max_attempts THEN 'dead' ELSE 'queued' END,
               last_error       = format('lease of %s expired at %s', j.lease_owner, j.lease_expires_at),
               lease_owner      = NULL,
               lease_expires_at = NULL,
               lease_token      = NULL,
               process_after    = CASE WHEN j.attempt >= j.max_attempts THEN j.process_after ELSE now() END,
               finished_at      = CASE WHEN j.attempt >= j.max_attempts THEN now() END,
               updated_at       = now()
          FROM expired e
         WHERE j.job_id = e.job_id
        RETURNING j.*
    ), dl AS (
        INSERT INTO public.job_dead_letter (job_id, job_kind, event_domain, job_snapshot, attempts, last_error, last_failed_at)
        SELECT m.job_id, m.job_kind, m.event_domain, to_jsonb(m), m.attempt, m.last_error, now()
          FROM moved m WHERE m.status = 'dead'
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM moved WHERE status = 'queued'), (SELECT count(*) FROM dl)
      INTO v_requeued, v_dead;
    RETURN jsonb_build_object('reaped', v_requeued + v_dead, 'requeued', v_requeued, 'dead_lettered', v_dead);
END;
$$;
