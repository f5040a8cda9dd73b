CREATE OR REPLACE FUNCTION iu_core.fn_iu_is_whitespace(p_value text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- The text half of "blank": empty, or only spaces, tabs, newlines, carriage returns, form
    -- or vertical feeds; NULL for NULL (the caller decides what NULL means). Used alone where
    -- a NULL must not count as blank or where a NULL result already fails the test (emit's
    -- accepting path: one comparison fewer per argument, prepared on every call). Inlined,
    -- so everything is pg_catalog-qualified (see fn_iu_payload_is_clean).
    SELECT pg_catalog.btrim(p_value, E' \t\r\n\f\x0B') OPERATOR(pg_catalog.=) ''::pg_catalog.text
$$;
