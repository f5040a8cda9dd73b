CREATE OR REPLACE FUNCTION iu_core.fn_iu_require_vector(p_caller text, p_param text, p_value anyarray)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
    -- The one shape check for every array argument (job ids, lease tokens, errors, dedupe
    -- keys, job kinds, domain scopes): one dimension, numbered from 1 (or empty, or NULL:
    -- the caller decides what NULL means). A two-dimensional array is flattened by unnest
    -- but answers NULL to a subscript and 0A000 to array_position, and '[5:6]={a,b}' pairs
    -- element i with the wrong partner: refused here with the function's name instead.
    IF p_value IS NOT NULL AND (pg_catalog.array_ndims(p_value) > 1 OR pg_catalog.array_lower(p_value, 1) <> 1) THEN
        RAISE EXCEPTION '%: % must be a one-dimensional array numbered from 1, got % dimension(s) %',
            p_caller, p_param, pg_catalog.array_ndims(p_value), pg_catalog.array_dims(p_value)
            USING ERRCODE = '22023', HINT = 'Pass a plain list, e.g. ARRAY[a, b, c] or ''{a,b,c}''.';
    END IF;
END;
$$;
