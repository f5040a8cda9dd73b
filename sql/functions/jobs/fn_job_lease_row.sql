CREATE OR REPLACE FUNCTION iu_core.fn_job_lease_row(p_function text, p_job_id uuid, p_worker text)
RETURNS public.job_queue
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
-- Shared by the single-job complete, fail and extend: checks the job id and worker name,
-- locks the job and returns it (P0002 when there is no such job). The caller then applies
-- the lease rule (fn_job_holds_lease).
DECLARE
    v_job public.job_queue;
BEGIN
    IF p_job_id IS NULL THEN
        RAISE EXCEPTION '%: p_job_id required', p_function USING ERRCODE = '22023';
    END IF;
    PERFORM iu_core.fn_iu_require_name(p_function, 'p_worker', p_worker);
    SELECT * INTO v_job FROM public.job_queue WHERE job_id = p_job_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: job % not found', p_function, p_job_id USING ERRCODE = 'P0002';
    END IF;
    RETURN v_job;
END;
$$;
