CREATE OR REPLACE FUNCTION iu_core.fn_job_dead_letter_matches(d public.job_dead_letter, p_job_kind text, p_error_prefix text,
                                           p_failed_after timestamptz, p_failed_before timestamptz)
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    -- The filter of each queue, written once for both the batch it replays and its "more"
    -- answer. One-expression SQL: inlined into both queries.
    --
    -- A job dead letter has no SQLSTATE column: error_code matches the start of last_error.
    SELECT (p_job_kind IS NULL OR d.job_kind = p_job_kind)
       AND (p_error_prefix IS NULL OR starts_with(d.last_error, p_error_prefix))
       AND (p_failed_after IS NULL OR d.last_failed_at >= p_failed_after)
       AND (p_failed_before IS NULL OR d.last_failed_at < p_failed_before)
$$;
