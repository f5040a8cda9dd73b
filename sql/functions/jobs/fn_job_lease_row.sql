CREATE OR REPLACE FUNCTION iu_core.fn_job_lease_row(p_function text, p_job_id uuid, p_worker text, p_lease_token uuid)
RETURNS public.job_queue
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
-- Shared by the single-job complete, fail and extend: checks the job id and worker name and
-- returns the job (P0002 when there is no such job), locked exactly when the caller holds
-- its lease (fn_job_holds_lease: running, this worker, not expired, the token, or the
-- claiming login for the name-only forms). The caller applies the same rule to the row it
-- gets back, and writes only when it holds.
--
-- Why the lease rule is in the locking statement: a refused call must change nothing, and
-- a row lock is a change other sessions feel. Locked first and tested after, any executor
-- that knows a job's id (the dedupe key answers it to anyone) could call
-- fn_job_complete(id, 'x', <any token>) in a transaction it leaves open: refused, yet
-- holding the row, so the real holder's complete, fail and extend wait out their
-- lock_timeout, the reaper (SKIP LOCKED) passes the expired lease by for as long as that
-- transaction lives, and a queued job is skipped by every claim. Here a caller that does
-- not hold the lease reads the row without a lock (only to say why it is refused, or that
-- the job already finished under this token).
--
-- Under READ COMMITTED a row another session is changing (a reap, a claim) is waited for
-- and tested again in its new version, so the lock is taken only on a version the caller
-- holds. The unlocked re-read can meet a version the caller holds that the locking
-- statement did not (a claim by the same worker under the same login committed between
-- them, for the name-only forms), so the lock is asked again then; the loop is bounded.
DECLARE
    v_job public.job_queue;
BEGIN
    IF p_job_id IS NULL THEN
        RAISE EXCEPTION '%: p_job_id required', p_function USING ERRCODE = '22023';
    END IF;
    PERFORM iu_core.fn_iu_require_name(p_function, 'p_worker', p_worker);
    FOR i IN 1..3 LOOP
        SELECT * INTO v_job FROM public.job_queue j
         WHERE j.job_id = p_job_id AND iu_core.fn_job_holds_lease(j, p_worker, p_lease_token)
           FOR UPDATE;
        IF FOUND THEN
            RETURN v_job;
        END IF;
        SELECT * INTO v_job FROM public.job_queue j WHERE j.job_id = p_job_id;
        IF NOT FOUND THEN
            RAISE EXCEPTION '%: job % not found', p_function, p_job_id USING ERRCODE = 'P0002';
        END IF;
        IF NOT coalesce(iu_core.fn_job_holds_lease(v_job, p_worker, p_lease_token), false) THEN
            RETURN v_job;
        END IF;
    END LOOP;
    RAISE EXCEPTION '%: job % changed hands three times during the call', p_function, p_job_id
        USING ERRCODE = '40001', HINT = 'Retry the call.';
END;
$$;
