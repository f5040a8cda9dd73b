CREATE OR REPLACE FUNCTION iu_core.fn_iu_event_outbox_refuse_payload(p_payload jsonb)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_context text;
BEGIN
    -- The refusing half of the payload hygiene rule, called by the outbox's payload domain
    -- only for a payload that breaks it. p_payload: that payload. Returns false, so the
    -- domain refuses the row with its own constraint (23514, event_outbox_safe_payload_hygiene),
    -- which is what a producer INSERTing directly gets (and fn_iu_emit_events, which names
    -- the element itself); touches nothing.
    --
    -- Inside fn_iu_emit_event it raises that function's own error instead (22023,
    -- "fn_iu_emit_event: p_safe_payload carries denylisted keys at <paths>"). This is what
    -- lets emit leave the hygiene test to the domain alone: the test is the most expensive
    -- of the row rules, and PostgreSQL prepares every function of a statement on every
    -- call, so testing it in emit's statement as well cost every emit the rule twice. The
    -- sign that the writer is fn_iu_emit_event is the call stack (PG_CONTEXT): emit's
    -- INSERT is a statement being executed, in a frame that reads "PL/pgSQL function
    -- [public.]fn_iu_emit_event(<its argument types>) line N at SQL statement". Read only
    -- here, on the refusing branch, so the accepting path pays nothing for it (a setting
    -- turned on and off around emit's INSERT cost every emit ~25,000 instructions). It is
    -- not a privilege and need not be: a caller can fake that line (a function of its own
    -- of that name, compiled where it prints unqualified; a statement whose text quotes
    -- it), and then gets fn_iu_payload_require_clean's refusal (22023, or 42501 for a
    -- producer that may not use schema iu_core) instead of the domain's. Either way the row
    -- is refused: the sign changes the wording and SQLSTATE of a refusal, never whether a
    -- row is stored (tests/producers_test.go tries both fakes).
    --
    -- It runs with search_path = pg_catalog, pg_temp and calls the package by its schema,
    -- exactly typed, so nothing planted in a schema a caller can write is resolved by it.
    GET DIAGNOSTICS v_context = PG_CONTEXT;
    IF v_context OPERATOR(pg_catalog.~) E'\nPL/pgSQL function (public\\.)?fn_iu_emit_event\\(text,text,text,text,text,text,text,jsonb\\) line [0-9]+ at SQL statement'::pg_catalog.text THEN
        PERFORM iu_core.fn_iu_payload_require_clean('fn_iu_emit_event'::pg_catalog.text,
                                                   'p_safe_payload'::pg_catalog.text, p_payload);
    END IF;
    RETURN false;
END;
$$;
