CREATE OR REPLACE FUNCTION iu_core.fn_job_error_text(p_error text)
RETURNS text
LANGUAGE sql IMMUTABLE
AS $$
    -- What a failure records: the caller's text trimmed and cut to 2,000 characters, or
    -- 'unspecified failure' when blank.
    SELECT left(coalesce(nullif(btrim(p_error), ''), 'unspecified failure'), 2000)
$$;
