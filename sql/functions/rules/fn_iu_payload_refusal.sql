CREATE OR REPLACE FUNCTION iu_core.fn_iu_payload_refusal(p_payload jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- Why fn_iu_payload_is_clean refuses p_payload, in words (NULL when it does not): the
    -- size, the depth, or where the denylisted keys sit ($.a[2].token). The limits are the
    -- rule's (65,536 bytes, 32 levels), tested in that order, so the key walk below only
    -- ever runs on a bounded value: it copies subtrees (fine for 64 kB x 32 levels, not
    -- for a 60 kB value 10,000 levels deep).
    SELECT CASE
        WHEN p_payload IS NULL OR iu_core.fn_iu_payload_is_clean(p_payload) THEN NULL
        WHEN octet_length(p_payload::text) > 65536 THEN
            format('is %s bytes as text, at most 65536 allowed', octet_length(p_payload::text))
        WHEN p_payload @? '$.**{33}' THEN
            'nests deeper than 32 levels'
        ELSE 'carries denylisted keys at ' || array_to_string(iu_core.fn_iu_payload_denied_paths(p_payload), ', ')
    END
$$;
