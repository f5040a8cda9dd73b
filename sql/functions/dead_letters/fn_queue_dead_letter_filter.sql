CREATE OR REPLACE FUNCTION iu_core.fn_queue_dead_letter_filter(p_caller text, p_filter jsonb, p_subject_key text)
RETURNS TABLE (subject text, error_code text, failed_after timestamptz, failed_before timestamptz)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
-- Parses and checks a bulk-replay filter: a JSON object whose keys are among p_subject_key
-- ('route_key' or 'job_kind'), 'error_code', 'failed_after' and 'failed_before', each a
-- string (timestamps parsable as timestamptz). Returns one row with the values (NULL =
-- not filtered). Anything else is refused with 22023 before any row is touched.
DECLARE
    v_key text;
BEGIN
    IF p_filter IS NULL OR jsonb_typeof(p_filter) <> 'object' THEN
        RAISE EXCEPTION '%: p_filter must be a JSON object', p_caller USING ERRCODE = '22023',
            HINT = 'Pass ''{}'' for every open dead letter, or narrow it with ' || p_subject_key
                   || ', error_code, failed_after, failed_before.';
    END IF;
    FOR v_key IN SELECT k FROM jsonb_object_keys(p_filter) AS k LOOP
        IF v_key NOT IN (p_subject_key, 'error_code', 'failed_after', 'failed_before') THEN
            RAISE EXCEPTION '%: unknown filter key %', p_caller, quote_literal(v_key) USING ERRCODE = '22023',
                HINT = format('Known keys: %s, error_code, failed_after, failed_before.', p_subject_key);
        END IF;
        IF jsonb_typeof(p_filter -> v_key) <> 'string' OR btrim(p_filter ->> v_key) = '' THEN
            RAISE EXCEPTION '%: filter key % must be a non-empty string', p_caller, quote_literal(v_key)
                USING ERRCODE = '22023';
        END IF;
    END LOOP;
    subject    := p_filter ->> p_subject_key;
    error_code := p_filter ->> 'error_code';
    -- Each bound parsed on its own, so the refusal names it. Any data error of the cast (a
    -- bad format, a field out of range, a time zone PostgreSQL does not know, which raised
    -- its own unprefixed "time zone ... not recognized") is the same refusal.
    FOREACH v_key IN ARRAY ARRAY['failed_after', 'failed_before'] LOOP
        BEGIN
            IF v_key = 'failed_after' THEN
                failed_after := (p_filter ->> v_key)::timestamptz;
            ELSE
                failed_before := (p_filter ->> v_key)::timestamptz;
            END IF;
        EXCEPTION WHEN data_exception THEN
            RAISE EXCEPTION '%: filter key % is not a timestamp: %', p_caller, v_key,
                quote_literal(left(p_filter ->> v_key, 100)) USING ERRCODE = '22023',
                HINT = 'For example ''2026-11-22T17:00:00Z'' or ''2026-11-22 17:00:00+01'' (a numeric offset, or a time zone name PostgreSQL knows).';
        END;
    END LOOP;
    RETURN NEXT;
END;
$$;
