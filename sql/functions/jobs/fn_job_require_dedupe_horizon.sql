CREATE OR REPLACE FUNCTION iu_core.fn_job_require_dedupe_horizon(p_caller text, p_process_after timestamptz)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
-- A job that carries a dedupe key may be due at most iu_core.fn_job_dedupe_horizon_seconds()
-- (24 h) ahead: its key is held while it waits, and every later enqueue of that key gets
-- its id back instead of a job of its own (22023 otherwise).
BEGIN
    IF p_process_after > now() + make_interval(secs => iu_core.fn_job_dedupe_horizon_seconds()) THEN
        RAISE EXCEPTION '%: a job with a dedupe key may be due at most % seconds ahead, got %', p_caller,
            iu_core.fn_job_dedupe_horizon_seconds(), p_process_after
            USING ERRCODE = '22023',
                  HINT = 'A waiting job holds its key against every later enqueue: schedule it without a key, or enqueue it (with its key) when it is at most 24 hours from due.';
    END IF;
END;
$$;
