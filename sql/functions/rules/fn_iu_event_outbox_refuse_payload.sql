CREATE OR REPLACE FUNCTION iu_core.fn_iu_event_outbox_refuse_payload(p_payload jsonb)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    v_context text;
BEGIN
    -- The refusing half of the payload hygiene rule, called by two payload domains only for
    -- a payload that breaks it: the outbox's (iu_safe_payload) and job_queue's
    -- (iu_core.iu_job_payload, since 018). p_payload: that payload. Returns false, so the
    -- domain refuses the row with its own constraint (23514, event_outbox_safe_payload_hygiene
    -- or job_queue_payload_hygiene), which is what a writer INSERTing directly gets (and
    -- fn_iu_emit_events, which names the element itself); touches nothing.
    --
    -- Inside the two single writers it raises the writer's own error instead (22023,
    -- "fn_iu_emit_event: p_safe_payload carries denylisted keys at <paths>", or the same of
    -- fn_job_enqueue's p_payload). This is what lets each leave the hygiene test to the
    -- domain alone: the test is the most expensive of the row rules, and PostgreSQL prepares
    -- every function of a statement on every call, so testing it in emit's statement as well
    -- cost every emit the rule twice; fn_job_enqueue turned the domain's error into its own
    -- in a subtransaction (BEGIN ... EXCEPTION), ~6,000 instructions a call. The sign that
    -- the writer is one of them is the call stack (PG_CONTEXT):
    --   * fn_job_enqueue copies the payload into a variable of job_queue's payload domain,
    --     so the frame right below this function's own (the context's second line) is
    --     fn_job_enqueue's: "PL/pgSQL function public.fn_job_enqueue(<its argument types>)
    --     line N during statement block local variable initialization". The copy is
    --     evaluated without SPI, so no statement text comes between, and fn_job_enqueue
    --     pins its search_path, so its name prints qualified. Only the name is tested, not
    --     the words around it: PostgreSQL translates those under a non-English lc_messages
    --     ("PL/pgSQL-Funktion ... Zeile N bei ..."). It is tested first and in that line
    --     only: a dirty job written by anything else (a trigger of emit's INSERT, say) is
    --     not taken for fn_job_enqueue's;
    --   * emit's INSERT is a statement being executed, in a frame that reads "PL/pgSQL
    --     function [public.]fn_iu_emit_event(<its argument types>) line N at SQL
    --     statement", below the statement's text.
    -- Read only here, on the refusing branch, so the accepting path pays nothing for it (a
    -- setting turned on and off around emit's INSERT cost every emit ~25,000 instructions).
    -- It is not a privilege and need not be: a caller can fake emit's line (a function of
    -- its own of that name, compiled where it prints unqualified; a statement whose text
    -- quotes it) or fn_job_enqueue's (a statement of its own whose text names it on its
    -- first line, the frame right below this one), and then gets
    -- fn_iu_payload_require_clean's refusal (22023, or 42501 for a producer that may not
    -- use schema iu_core) instead of the domain's. Either way the row
    -- is refused: the sign changes the wording and SQLSTATE of a refusal, never whether a
    -- row is stored (tests/producers_test.go tries both fakes).
    --
    -- It runs with search_path = pg_catalog, pg_temp and calls the package by its schema,
    -- exactly typed, so nothing planted in a schema a caller can write is resolved by it.
    GET DIAGNOSTICS v_context = PG_CONTEXT;
    IF v_context OPERATOR(pg_catalog.~) E'^[^\n]*\n[^\n]*[^\n"A-Za-z0-9_$]public\\.fn_job_enqueue\\(text,text,jsonb,timestamp with time zone,text,integer\\)'::pg_catalog.text THEN
        PERFORM iu_core.fn_iu_payload_require_clean('fn_job_enqueue'::pg_catalog.text,
                                                   'p_payload'::pg_catalog.text, p_payload);
    ELSIF v_context OPERATOR(pg_catalog.~) E'\nPL/pgSQL function (public\\.)?fn_iu_emit_event\\(text,text,text,text,text,text,text,jsonb\\) line [0-9]+ at SQL statement'::pg_catalog.text THEN
        PERFORM iu_core.fn_iu_payload_require_clean('fn_iu_emit_event'::pg_catalog.text,
                                                   'p_safe_payload'::pg_catalog.text, p_payload);
    END IF;
    RETURN false;
END;
$$;
