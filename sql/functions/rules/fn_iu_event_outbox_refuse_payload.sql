CREATE OR REPLACE FUNCTION iu_core.fn_iu_event_outbox_refuse_payload(p_payload jsonb)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- The refusing half of the payload hygiene rule, called by the outbox's payload domain
    -- only for a payload that breaks it. p_payload: that payload. Returns false, so the
    -- domain refuses the row with its own constraint (23514, event_outbox_safe_payload_hygiene),
    -- which is what a producer INSERTing directly gets; touches nothing.
    --
    -- Inside fn_iu_emit_event it raises that function's own error instead (22023,
    -- "fn_iu_emit_event: p_safe_payload carries denylisted keys at <paths>"). This is what
    -- lets emit leave the hygiene test to the domain alone: the test is the most expensive
    -- of the row rules, and PostgreSQL prepares every function of a statement on every
    -- call, so testing it in emit's statement as well cost every emit the rule twice. The
    -- sign that the writer is fn_iu_emit_event is the setting iu.emit_event = 'on', which
    -- that function turns on for its INSERT only (and off again right after it). A
    -- caller who sets it by hand changes nothing but the wording and SQLSTATE of their own
    -- refusal: the row is refused either way.
    --
    -- It runs with search_path = pg_catalog, pg_temp and calls the package by its schema,
    -- exactly typed, so nothing planted in a schema a caller can write is resolved by it.
    IF pg_catalog.current_setting('iu.emit_event'::pg_catalog.text, true) OPERATOR(pg_catalog.=) 'on'::pg_catalog.text THEN
        PERFORM iu_core.fn_iu_payload_require_clean('fn_iu_emit_event'::pg_catalog.text,
                                                   'p_safe_payload'::pg_catalog.text, p_payload);
    END IF;
    RETURN false;
END;
$$;
