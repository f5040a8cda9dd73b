CREATE OR REPLACE FUNCTION iu_core.fn_job_dead_letter_insert(p_job_id uuid)
RETURNS uuid
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    -- Copies a job that just went dead into job_dead_letter, whole row included.
    INSERT INTO public.job_dead_letter (job_id, job_kind, event_domain, job_snapshot, attempts, last_error, last_failed_at)
    SELECT j.job_id, j.job_kind, j.event_domain, to_jsonb(j), j.attempt, j.last_error, now()
      FROM public.job_queue j WHERE j.job_id = p_job_id
    RETURNING id
$$;
