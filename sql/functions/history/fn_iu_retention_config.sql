CREATE OR REPLACE FUNCTION iu_core.fn_iu_retention_config(p_caller text, p_key text, p_min bigint, p_max bigint)
RETURNS bigint
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_retention_config(p_caller, p_key, p_min, p_max) -> bigint: a whole-number dot_config
    -- value (retention days, partition width). NULL when the key is missing or empty (for the
    -- retention keys: keep forever). Anything but digits, or outside [p_min, p_max], is refused
    -- with 22023 naming the key, so a typo never drops history. Internal.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_raw text := (SELECT btrim(c.value) FROM public.dot_config c WHERE c.key = p_key);
BEGIN
    IF v_raw IS NULL OR v_raw = '' THEN
        RETURN NULL;
    END IF;
    IF v_raw !~ '^[0-9]{1,15}$' OR v_raw::bigint NOT BETWEEN p_min AND p_max THEN
        RAISE EXCEPTION '%: dot_config % = % is not a whole number from % to %', p_caller, p_key, quote_literal(v_raw), p_min, p_max
            USING ERRCODE = '22023',
                  HINT = format('UPDATE dot_config SET value = ''<number>'' WHERE key = %L; empty keeps history forever.', p_key);
    END IF;
    RETURN v_raw::bigint;
END;
$$;
