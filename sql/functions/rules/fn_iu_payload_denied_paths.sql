CREATE OR REPLACE FUNCTION iu_core.fn_iu_payload_denied_paths(p_payload jsonb)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- The slow, explanatory twin of fn_iu_payload_is_clean: used only to build error
    -- messages, so an operator sees where the offending key sits ($.a[2].token).
    WITH RECURSIVE walk(path, value) AS (
        SELECT '$'::text, p_payload
        UNION ALL
        SELECT w.path || CASE WHEN jsonb_typeof(w.value) = 'object' THEN '.' || e.key ELSE '[' || e.key || ']' END,
               e.value
          FROM walk w
          CROSS JOIN LATERAL (
                SELECT o.key, o.value FROM jsonb_each(CASE WHEN jsonb_typeof(w.value) = 'object' THEN w.value END) o
                UNION ALL
                SELECT (a.ord - 1)::text, a.value
                  FROM jsonb_array_elements(CASE WHEN jsonb_typeof(w.value) = 'array' THEN w.value END)
                       WITH ORDINALITY a(value, ord)
          ) e
    )
    SELECT coalesce(array_agg(path ORDER BY path), '{}')
      FROM walk
     WHERE path <> '$'
       AND lower(regexp_replace(path, '^.*[.]', '')) IN ('body','content','raw','vector','embedding',
                                                          'secret','token','password','ssn','personal_data')
$$;
