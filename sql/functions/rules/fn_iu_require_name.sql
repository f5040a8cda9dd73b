CREATE OR REPLACE FUNCTION iu_core.fn_iu_require_name(p_caller text, p_param text, p_value text, p_max_bytes integer DEFAULT 200)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
    -- The one argument check for every name, id and key a caller hands the package (worker
    -- names, executor ids, route keys, job kinds, dedupe keys...). Blank is the same as
    -- empty: a name of spaces cannot be told apart in a psql listing. The byte bound keeps
    -- every index that holds the value (and the idempotency key built from it) far below
    -- btree's ~2.7 kB row limit, so a long name is refused here with 22023 instead of
    -- registering and then failing every later run with 54000.
    IF iu_core.fn_iu_is_blank(p_value) THEN
        RAISE EXCEPTION '%: % required', p_caller, p_param
            USING ERRCODE = '22023', HINT = 'Pass a non-blank name.';
    END IF;
    IF octet_length(p_value) > p_max_bytes THEN
        RAISE EXCEPTION '%: % is % bytes long, at most % allowed', p_caller, p_param,
            octet_length(p_value), p_max_bytes
            USING ERRCODE = '22023', HINT = 'Use a shorter name.';
    END IF;
END;
$$;
