CREATE OR REPLACE FUNCTION iu_core.fn_job_require_range(p_caller text, p_param text, p_value integer, p_min integer, p_max integer)
RETURNS integer
LANGUAGE plpgsql IMMUTABLE
AS $$
-- The one bounds check for the integer arguments of the queue (limits, lease seconds,
-- max attempts): NULL or out of [p_min, p_max] is refused with 22023. Returns the value.
BEGIN
    IF p_value IS NULL OR p_value NOT BETWEEN p_min AND p_max THEN
        RAISE EXCEPTION '%: % must be between % and %, got %', p_caller, p_param, p_min, p_max,
            coalesce(p_value::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    RETURN p_value;
END;
$$;
