CREATE OR REPLACE FUNCTION iu_core.fn_iu_require_trusted_search_path(p_caller text, p_full boolean DEFAULT false)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- The install-time refusal: the install calls it with p_full true before it creates the
    -- API (who may CREATE in public, and every function and operator in public that belongs
    -- to an untrusted role); p_full false checks who may CREATE in public only. The API
    -- lives in public and its callers look it up there, unqualified, so an overload planted
    -- in public would be found by them; the package's own functions pin search_path =
    -- pg_catalog, pg_temp and are not affected. Returns true, or raises 42501 naming the
    -- threats, with the statements that remove them in the HINT. The runtime verification
    -- (W10) runs the same scan later, read-only.
DECLARE
    v_what text;
    v_fix  text;
BEGIN
    -- The common answer first, as one existence probe (no aggregate, no text built); the
    -- threats are only described when there are some.
    IF NOT p_full AND NOT EXISTS (SELECT 1 FROM iu_core.fn_iu_search_path_create_threats()) THEN
        RETURN true;
    END IF;
    IF p_full THEN
        SELECT pg_catalog.string_agg(pg_catalog.format('%s %s (%s)', t.threat, t.object, t.holder), '; '),
               pg_catalog.string_agg(t.fix, ' ')
          INTO v_what, v_fix FROM iu_core.fn_iu_search_path_threats() t;
    ELSE
        SELECT pg_catalog.string_agg(pg_catalog.format('%s %s (%s)', t.threat, t.object, t.holder), '; '),
               pg_catalog.string_agg(t.fix, ' ')
          INTO v_what, v_fix FROM iu_core.fn_iu_search_path_create_threats() t;
    END IF;
    IF v_what IS NOT NULL THEN
        RAISE EXCEPTION '%: refused: an untrusted role can plant functions or operators on the package''s search_path: %',
            p_caller, v_what
            USING ERRCODE = '42501',
                  HINT = 'A superuser runs: ' || v_fix || ' Only superusers, the package owner and its members may create in schema public.';
    END IF;
    RETURN true;
END;
$$;
