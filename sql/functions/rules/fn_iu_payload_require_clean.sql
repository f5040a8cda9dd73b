CREATE OR REPLACE FUNCTION iu_core.fn_iu_payload_require_clean(p_caller text, p_param text, p_payload jsonb)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
    -- The one argument check every writer of a stored or signalled payload calls, so the
    -- refusal reads the same everywhere: "<function>: <parameter> ...", SQLSTATE 22023.
    IF p_payload IS NULL OR jsonb_typeof(p_payload) <> 'object' THEN
        RAISE EXCEPTION '%: % must be a JSON object', p_caller, p_param USING ERRCODE = '22023';
    END IF;
    IF NOT iu_core.fn_iu_payload_is_clean(p_payload) THEN
        RAISE EXCEPTION '%: % %', p_caller, p_param, iu_core.fn_iu_payload_refusal(p_payload)
            USING ERRCODE = '22023',
                  HINT = 'Payloads are signals, never data: at most 65536 bytes, at most 32 levels deep, and never a key named body, content, raw, vector, embedding, secret, token, password, ssn or personal_data (in any letter case, at any depth).';
    END IF;
END;
$$;
