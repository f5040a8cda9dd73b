CREATE OR REPLACE FUNCTION iu_core.fn_job_require_process_after(p_caller text, p_process_after timestamptz)
RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
-- The one check of a caller's process_after: NULL means now; infinity, -infinity and
-- anything more than one year ahead are refused (22023). Why: a job that is never due
-- would hold its dedupe key forever and block every later enqueue of that key.
-- Returns the value to store: a time in the past is stored as now, so a job never goes
-- ahead of the jobs already waiting (claims take the oldest process_after first).
BEGIN
    IF p_process_after IS NULL THEN
        RETURN now();
    END IF;
    IF NOT isfinite(p_process_after) THEN
        RAISE EXCEPTION '%: p_process_after must be a finite time, got %', p_caller, p_process_after
            USING ERRCODE = '22023', HINT = 'Pass a time at most one year ahead, or NULL for now.';
    END IF;
    IF p_process_after > now() + interval '1 year' THEN
        RAISE EXCEPTION '%: p_process_after % is more than one year ahead', p_caller, p_process_after
            USING ERRCODE = '22023', HINT = 'Jobs may be scheduled at most one year ahead; re-enqueue later for longer delays.';
    END IF;
    RETURN greatest(p_process_after, now());
END;
$$;
