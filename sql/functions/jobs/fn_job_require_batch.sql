CREATE OR REPLACE FUNCTION iu_core.fn_job_require_batch(p_function text, p_worker text, p_job_ids uuid[], p_lease_tokens uuid[])
RETURNS integer
LANGUAGE plpgsql IMMUTABLE
AS $$
-- The argument check of the batch calls: a worker name, two arrays of the same length
-- (at most 10,000, each one-dimensional and numbered from 1), no NULL element. Returns
-- the length.
BEGIN
    PERFORM iu_core.fn_iu_require_name(p_function, 'p_worker', p_worker);
    IF p_job_ids IS NULL OR p_lease_tokens IS NULL THEN
        RAISE EXCEPTION '%: p_job_ids and p_lease_tokens required', p_function USING ERRCODE = '22023';
    END IF;
    PERFORM iu_core.fn_iu_require_vector(p_function, 'p_job_ids', p_job_ids);
    PERFORM iu_core.fn_iu_require_vector(p_function, 'p_lease_tokens', p_lease_tokens);
    IF cardinality(p_job_ids) <> cardinality(p_lease_tokens) THEN
        RAISE EXCEPTION '%: % job ids but % lease tokens', p_function, cardinality(p_job_ids), cardinality(p_lease_tokens)
            USING ERRCODE = '22023', HINT = 'Pass each job''s lease_token at the same position as its id.';
    END IF;
    PERFORM iu_core.fn_job_require_range(p_function, 'the number of jobs', cardinality(p_job_ids), 0, 10000);
    IF array_position(p_job_ids, NULL) IS NOT NULL OR array_position(p_lease_tokens, NULL) IS NOT NULL THEN
        RAISE EXCEPTION '%: p_job_ids and p_lease_tokens must not contain NULL', p_function USING ERRCODE = '22023';
    END IF;
    RETURN cardinality(p_job_ids);
END;
$$;
