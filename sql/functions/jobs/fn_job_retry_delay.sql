CREATE OR REPLACE FUNCTION iu_core.fn_job_retry_delay(p_attempt integer)
RETURNS numeric
LANGUAGE sql VOLATILE
AS $$
    -- Backoff after failed attempt p_attempt: min(3600, 5 * 2^(attempt-1)) seconds times a
    -- random factor in [0.75, 1.25), so failures of many jobs at once do not retry in step.
    SELECT round((least(3600, 5 * power(2, greatest(p_attempt, 1) - 1)) * (0.75 + random() * 0.5))::numeric, 3)
$$;
