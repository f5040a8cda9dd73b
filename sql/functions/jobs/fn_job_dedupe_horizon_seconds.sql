CREATE OR REPLACE FUNCTION iu_core.fn_job_dedupe_horizon_seconds()
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- How far ahead a job with a dedupe key may be scheduled: 24 hours. A live job holds its
    -- key until it finishes, so a key enqueued for a date a year ahead blocked every enqueue
    -- of that key (the next one got the squatter's job id back) for that year. Jobs without
    -- a key may still be scheduled up to a year ahead (fn_job_require_process_after).
    SELECT 86400
$$;
