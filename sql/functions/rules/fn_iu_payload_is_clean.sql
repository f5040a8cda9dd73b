CREATE OR REPLACE FUNCTION iu_core.fn_iu_payload_is_clean(p_payload jsonb)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- Payload hygiene, the whole rule: a payload is clean when it is NULL (the caller
    -- decides what NULL means), or when it
    --   1. is at most 65,536 bytes as text (jsonb's own text form) and nests at most 32
    --      levels (no value inside 33 containers: `$.**{33}` finds nothing). Payloads are
    --      signals, never data. The bounds come first: the size is the text's length, and
    --      the depth test stops at level 33 however deep the value goes (~4k and ~5k
    --      instructions on a small payload). pg_column_size would read the size from the
    --      datum's header, but it is STABLE, and a STABLE call stops this IMMUTABLE function
    --      from being inlined: that cost every insert ~350k instructions;
    --   2. carries no denylisted key (body, content, raw, vector, embedding, secret, token,
    --      password, ssn, personal_data), at any depth, in any letter case. The test reads
    --      the payload's text once, linearly, and builds nothing per level (a jsonpath
    --      `.keyvalue()` walk copies every subtree once per level above it: its memory grew
    --      with the square of the depth and one 60 kB payload took a backend to 24 GB).
    --      jsonb prints a key as "key": right after `{` or `, `, and every quote inside a
    --      string as \", so `{"token": ` or ` "token": ` in the lowercased text is a key
    --      named token, and a key is never missed. The LIKE prefilter ("token": anywhere, `_`
    --      escaped so personal-data is not mistaken for personal_data) settles the common,
    --      clean case; the exact pattern runs only when the prefilter matched (a denied key,
    --      or a key or string quoting one). lower() folds at least every case variant a
    --      case-insensitive match accepts, so the test only ever refuses more.
    --
    -- The limits are restated in fn_iu_payload_refusal (which explains a refusal); the
    -- boundary tests hold both to them.
    --
    -- Everything is pg_catalog-qualified and nothing but built-ins is called, on purpose.
    -- This function is inlined into the CHECKs that call it (the outbox's payload domain,
    -- other tables' CHECKs) and into callers' queries (no SET search_path, which would stop
    -- the inlining and cost a function call per row), and an inlined body is resolved in
    -- the CALLER's search_path: an unqualified operator could pick one a producer created in
    -- its own schema and switch hygiene off. A producer that INSERTs directly needs EXECUTE
    -- on this function only, not on helpers it would call.
    SELECT p_payload IS NULL
        OR (pg_catalog.octet_length(CAST(p_payload AS pg_catalog.text)) OPERATOR(pg_catalog.<=) 65536
            AND NOT p_payload OPERATOR(pg_catalog.@?) CAST('$.**{33}' AS pg_catalog.jsonpath)
            AND NOT (pg_catalog.lower(CAST(p_payload AS pg_catalog.text)) OPERATOR(pg_catalog.~~) ANY (ARRAY[
                         '%"body": %', '%"content": %', '%"raw": %', '%"vector": %', '%"embedding": %',
                         '%"secret": %', '%"token": %', '%"password": %', '%"ssn": %', '%"personal\_data": %']::pg_catalog.text[])
                     AND pg_catalog.lower(CAST(p_payload AS pg_catalog.text)) OPERATOR(pg_catalog.~)
                         '[{ ]"(body|content|raw|vector|embedding|secret|token|password|ssn|personal_data)": '::pg_catalog.text))
$$;
