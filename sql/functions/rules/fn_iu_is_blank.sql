CREATE OR REPLACE FUNCTION iu_core.fn_iu_is_blank(p_value text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- What "blank" means everywhere in the package (argument checks and table CHECKs):
    -- NULL, or whitespace only (fn_iu_is_whitespace: empty, or only spaces, tabs, newlines,
    -- carriage returns, form or vertical feeds).
    SELECT p_value IS NULL OR iu_core.fn_iu_is_whitespace(p_value)
$$;
