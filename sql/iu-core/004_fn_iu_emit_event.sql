-- 004_fn_iu_emit_event.sql
--
-- Adds fn_iu_emit_event, the one sanctioned writer of event_outbox. It validates every
-- argument up front so a caller gets a clear, function-prefixed error with the right
-- SQLSTATE instead of a bare constraint violation. It refuses the two alert types the
-- stale-check owns (queue_worker_silent and queue_worker_recovered, reserved in every
-- domain; the package writes them in domain system).
--
-- It is every producer's hot path, so it costs one statement: the INSERT reads the type's
-- registration (which also proves the domain and the type valid names: the registry holds
-- only names, see 003) and tests the other arguments in the same statement, and the
-- table's own rules (its columns' domains) apply as to any INSERT; the step-by-step
-- explanation (fn_iu_emit_event_refuse) runs only when nothing was written. PostgreSQL
-- prepares every function and operator of that statement, and of the domains' checks, on
-- each call (~1.3k instructions each, measured), so every test on it is paid on every emit
-- and none is there twice: payload hygiene, the most expensive rule, is left to the payload
-- domain, whose refusing branch gives this function's own error when the writer is this
-- function (fn_iu_event_outbox_refuse_payload, 001).

-- The writable-schema rule, on this path. Like every SECURITY DEFINER function it runs with
-- search_path = public, pg_temp, where an untrusted role that may CREATE in public could
-- plant a better-matching overload of a function or operator (see 001). The package's
-- other SECURITY DEFINER functions refuse to run while that is possible (the guard,
-- fn_iu_require_trusted_search_path, ~30 us of catalog probes per call: on a producer's
-- single-row emit that alone cost about as much as the insert). fn_iu_emit_event's
-- accepting path instead resolves nothing a planted object could win: every function and
-- operator on it is schema-qualified (pg_catalog.x, OPERATOR(pg_catalog.=), public.fn_...)
-- and called with arguments of exactly its declared types (an exact match is always
-- chosen, and nobody but the owner can create a second function with the same name and
-- argument types in public); the table's rules are stored resolved. Its refusing paths,
-- written plainly, call the guard first. TestSchemaAttack_EmitResolvesNothingPlanted
-- plants overloads of everything the accepting path calls and shows none of them runs.

-- +goose Up

-- +goose StatementBegin
CREATE FUNCTION fn_iu_emit_event_refuse(
    p_event_domain        text,
    p_event_type          text,
    p_event_stream        text,
    p_delivery_lane       text,
    p_event_severity      text,
    p_event_subject_table text,
    p_event_subject_ref   text,
    p_safe_payload        jsonb
)
RETURNS void
LANGUAGE plpgsql
AS $$
    -- The argument rules of fn_iu_emit_event, one after the other, each refusal in its
    -- caller's name: raises on the first one broken, returns when all hold. Called by
    -- fn_iu_emit_event only when its INSERT wrote nothing (its one-expression test flagged
    -- an argument, or the type is unregistered: then this returns and the caller says so).
    -- Touches nothing. Runs inside fn_iu_emit_event's rights and
    -- search_path, so the guard comes first (called exactly typed: nothing planted can
    -- match it better).
BEGIN
    PERFORM public.fn_iu_require_trusted_search_path('fn_iu_emit_event'::pg_catalog.text, false);
    PERFORM fn_iu_require_name('fn_iu_emit_event', 'p_event_domain', p_event_domain);
    PERFORM fn_iu_require_name('fn_iu_emit_event', 'p_event_type', p_event_type);
    PERFORM fn_iu_require_name('fn_iu_emit_event', 'p_event_stream', p_event_stream);
    -- Optional subject: blank is the same as none (stored as NULL); when given, bounded
    -- like a name.
    IF NOT fn_iu_is_blank(p_event_subject_table) THEN
        PERFORM fn_iu_require_name('fn_iu_emit_event', 'p_event_subject_table', p_event_subject_table);
    END IF;
    IF NOT fn_iu_is_blank(p_event_subject_ref) THEN
        PERFORM fn_iu_require_name('fn_iu_emit_event', 'p_event_subject_ref', p_event_subject_ref, 1000);
    END IF;
    -- The stale-check's alerts are the package's own voice: a caller who could emit a
    -- "silent" or "recovered" for another executor could page people falsely or, worse,
    -- make a real silence look handled. fn_queue_stale_check writes them itself. The two
    -- type names are reserved in every domain, as the outbox's own rule has them (the
    -- domain iu_event_type); this function runs as the package, which that rule lets through.
    IF p_event_type IN ('queue_worker_silent', 'queue_worker_recovered') THEN
        RAISE EXCEPTION 'fn_iu_emit_event: %/% events are written only by the package (fn_queue_stale_check)',
            p_event_domain, p_event_type
            USING ERRCODE = '42501',
                  HINT = 'queue_worker_silent and queue_worker_recovered are reserved event types in every domain; register and emit your own type (executor silence is reported by fn_queue_stale_check).';
    END IF;
    IF p_delivery_lane IS NULL OR p_delivery_lane NOT IN ('immediate', 'standard', 'batch') THEN
        RAISE EXCEPTION 'fn_iu_emit_event: p_delivery_lane % is not one of immediate, standard, batch',
            coalesce(quote_literal(p_delivery_lane), 'NULL') USING ERRCODE = '22023';
    END IF;
    IF p_event_severity IS NULL OR p_event_severity NOT IN ('debug', 'info', 'warning', 'critical') THEN
        RAISE EXCEPTION 'fn_iu_emit_event: p_event_severity % is not one of debug, info, warning, critical',
            coalesce(quote_literal(p_event_severity), 'NULL') USING ERRCODE = '22023';
    END IF;
    PERFORM fn_iu_payload_require_clean('fn_iu_emit_event', 'p_safe_payload', p_safe_payload);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_emit_event(
    p_event_domain        text,
    p_event_type          text,
    p_event_stream        text,
    p_delivery_lane       text  DEFAULT 'standard',
    p_event_severity      text  DEFAULT 'info',
    p_event_subject_table text  DEFAULT NULL,
    p_event_subject_ref   text  DEFAULT NULL,
    p_safe_payload        jsonb DEFAULT '{}'::jsonb
)
RETURNS uuid
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
SET iu.emit_event = 'on'
AS $$
    -- Writes one event and returns its id. Arguments: the event's fields; a blank subject
    -- is stored as NULL. Refuses (22023) a blank or over-long name, a lane or severity
    -- outside its list, a payload that is not a clean JSON object, an unregistered type;
    -- (42501) the stale-check's own alert types. Algorithm: one INSERT ... SELECT from the
    -- type's registration row (the registry holds only valid names, so a match proves
    -- p_event_domain and p_event_type valid) whose WHERE holds the argument rules the
    -- table's domains do not already test, or test only in a cheap comparison; no row
    -- back means nothing was written, and only then does fn_iu_emit_event_refuse walk the
    -- rules one by one to raise the right error (or the type is unregistered). Payload
    -- hygiene is tested once, by the payload's domain: for a dirty payload its refusing
    -- branch raises this function's own error (fn_iu_event_outbox_refuse_payload), told by
    -- the setting iu.emit_event that this function's SET clause turns on for its own
    -- execution. A blank subject, however long, is not an error: it is stored as NULL.
DECLARE
    -- Drawn here rather than by the column default and read back with RETURNING, which
    -- costs the INSERT a projection and the call a result row.
    v_id pg_catalog.uuid := pg_catalog.gen_random_uuid();
BEGIN
    -- Everything on the accepting path is qualified and exactly typed (see the header).
    -- The row is produced only when the type is registered (the join) and every condition
    -- holds. Each is written so that a NULL argument fails it (a NULL comparison is not
    -- true), except the subjects' bounds, for which NULL is valid. What the WHERE leaves to the
    -- table: a name's emptiness (iu_event_name; the registry and the stream's blank test
    -- here are stricter) and the payload's hygiene (iu_safe_payload, see above). The lane,
    -- severity and object tests repeat their domains' rules: one comparison each, cheaper
    -- than a refusing branch in the domain that every direct INSERT would prepare too.
    INSERT INTO public.event_outbox (id, event_domain, event_type, event_stream, delivery_lane, event_severity,
                                     event_subject_table, event_subject_ref, safe_payload)
    SELECT v_id, p_event_domain, p_event_type, p_event_stream, p_delivery_lane, p_event_severity,
           CASE WHEN public.fn_iu_is_whitespace(p_event_subject_table)
                THEN NULL ELSE p_event_subject_table END,
           CASE WHEN public.fn_iu_is_whitespace(p_event_subject_ref)
                THEN NULL ELSE p_event_subject_ref END,
           p_safe_payload
      FROM public.event_type_registry r
     WHERE r.event_domain OPERATOR(pg_catalog.=) p_event_domain
       AND r.event_type OPERATOR(pg_catalog.=) p_event_type
       AND NOT public.fn_iu_is_whitespace(p_event_stream)
       AND pg_catalog.octet_length(p_event_stream) OPERATOR(pg_catalog.<=) 200
       AND p_event_type OPERATOR(pg_catalog.<>) ALL ('{queue_worker_silent,queue_worker_recovered}'::pg_catalog.text[])
       AND p_delivery_lane OPERATOR(pg_catalog.=) ANY ('{immediate,standard,batch}'::pg_catalog.text[])
       AND p_event_severity OPERATOR(pg_catalog.=) ANY ('{debug,info,warning,critical}'::pg_catalog.text[])
       AND pg_catalog.jsonb_typeof(p_safe_payload) OPERATOR(pg_catalog.=) 'object'::pg_catalog.text
       AND (pg_catalog.octet_length(p_event_subject_table) OPERATOR(pg_catalog.<=) 200
            AND pg_catalog.octet_length(p_event_subject_ref) OPERATOR(pg_catalog.<=) 1000) IS NOT FALSE;
    IF NOT FOUND THEN
        -- A subject over its bound that is blank is not an error: like every blank subject
        -- it is stored as NULL. The statement above tests only the bounds (NULL passes), so
        -- this rare case costs a second call here instead of two more tests per subject on
        -- every emit. Qualified and exactly typed like the accepting path, which it rejoins.
        IF (pg_catalog.octet_length(p_event_subject_table) OPERATOR(pg_catalog.>) 200
                AND public.fn_iu_is_whitespace(p_event_subject_table))
           OR (pg_catalog.octet_length(p_event_subject_ref) OPERATOR(pg_catalog.>) 1000
                AND public.fn_iu_is_whitespace(p_event_subject_ref)) THEN
            RETURN public.fn_iu_emit_event(
                p_event_domain, p_event_type, p_event_stream, p_delivery_lane, p_event_severity,
                CASE WHEN public.fn_iu_is_whitespace(p_event_subject_table) THEN NULL ELSE p_event_subject_table END,
                CASE WHEN public.fn_iu_is_whitespace(p_event_subject_ref) THEN NULL ELSE p_event_subject_ref END,
                p_safe_payload);
        END IF;
        -- Nothing written: explain why. A broken argument rule raises in the refuse
        -- function (guarded); otherwise the type is not registered.
        PERFORM public.fn_iu_emit_event_refuse(p_event_domain, p_event_type, p_event_stream, p_delivery_lane,
                                               p_event_severity, p_event_subject_table, p_event_subject_ref,
                                               p_safe_payload);
        RAISE EXCEPTION 'fn_iu_emit_event: event type %/% is not registered', p_event_domain, p_event_type
            USING ERRCODE = '22023',
                  HINT = format('Register it first: INSERT INTO event_type_registry (event_domain, event_type, description) VALUES (%L, %L, ''...'');',
                                p_event_domain, p_event_type);
    END IF;
    RETURN v_id;
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION fn_iu_emit_event_refuse(text, text, text, text, text, text, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_emit_event(text, text, text, text, text, text, text, jsonb) FROM PUBLIC;

-- +goose Down
DROP FUNCTION fn_iu_emit_event(text, text, text, text, text, text, text, jsonb);
DROP FUNCTION fn_iu_emit_event_refuse(text, text, text, text, text, text, text, jsonb);
