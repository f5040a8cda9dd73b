CREATE OR REPLACE FUNCTION public.fn_iu_emit_event(
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
SET search_path = pg_catalog, pg_temp
AS $$
    -- Writes one event and returns its id. Arguments: the event's fields; a blank subject
    -- is stored as NULL. Refuses (22023) a blank or over-long name, a lane or severity
    -- outside its list, a payload that is not a clean JSON object, an unregistered type;
    -- (42501) the stale-check's own alert types. Touches event_outbox (one row) and reads
    -- event_type_registry. Algorithm: an INSERT ... SELECT from the type's registration
    -- row (the registry holds only valid names, so a match proves p_event_domain and
    -- p_event_type valid) whose WHERE holds the argument rules the table's domains do not
    -- already test, or test only in a cheap comparison. It comes in two forms. The fast one
    -- runs first and tests conditions that are sufficient, not exact, in fewer expression
    -- steps: a stream or subject whose first byte is above the space (~>=~ '!') is not
    -- blank, so a subject that passes is stored as given and needs no blank-to-NULL CASE.
    -- What it leaves out (a blank subject, a name that starts with whitespace or a control
    -- character, a refusal) finds no row there and takes the exact form, the rules as they
    -- are written; no row back from that one means nothing was written, and only then does
    -- fn_iu_emit_event_refuse walk the rules one by one to raise the right error (or the
    -- type is unregistered). Whatever the fast form writes, the exact one would have written
    -- the same; so the rules, the row and every refusal are the exact form's, and a valid
    -- call the fast form leaves out pays for both statements. Payload hygiene is tested
    -- once, by the payload's domain: for a dirty payload its refusing branch raises this
    -- function's own error (fn_iu_event_outbox_refuse_payload), told by the call stack that
    -- this function's INSERT is the writer; the accepting path sets and reads nothing for it.
    -- (It was a setting, iu.emit_event, turned on and off around the INSERT with
    -- set_config: ~25,000 instructions a call. A SET clause of a custom parameter is no
    -- option: PostgreSQL 15+ lets only a superuser, or a role granted SET on it, create such
    -- a function, and the package installs without one.) A blank subject, however long, is
    -- not an error: it is stored as NULL. The id is time-ordered (iu_core.fn_iu_event_new_id,
    -- as the column default a direct INSERT gets).
    --
    -- Why the fast form (bench/README.md, "Producers, issue 26"): PostgreSQL builds every
    -- expression of a statement anew each time it runs it, and each step (a parameter, a
    -- function call, an AND, a CASE jump) costs several hundred instructions before it does
    -- any work. The blank-to-NULL CASEs and btrim tests were ~20 steps of the exact form;
    -- and its argument tests, written apart from any column of the registration, make the
    -- planner build a Result node of their own above the registry scan.
DECLARE
    -- Drawn here rather than by the column default and read back with RETURNING, which
    -- costs the INSERT a projection and the call a result row.
    v_id pg_catalog.uuid := iu_core.fn_iu_event_new_id();
BEGIN
    -- Everything on the accepting path is schema-qualified and exactly typed, so it resolves
    -- the same under any search_path (the pinned one holds only pg_catalog and pg_temp).
    -- The row is produced only when the type is registered (the join) and every condition
    -- holds. Each is written so that a NULL argument fails it (a NULL comparison is not
    -- true), except the subjects', for which NULL is valid. What the WHERE leaves to the
    -- table: a name's emptiness (iu_event_name; the registry and the stream's test here are
    -- stricter) and the payload's hygiene (iu_safe_payload, see above). The lane, severity
    -- and object tests repeat their domains' rules: one comparison each, cheaper than a
    -- refusing branch in the domain that every direct INSERT would prepare too.
    -- (p_safe_payload @> '{}' holds exactly for an object, in one operator where
    -- jsonb_typeof(...) = 'object' took two.)
    --
    -- The fast form. x ~>=~ '!' compares bytes (no collation): true exactly when x's first
    -- byte is 0x21 or above, so x is not empty and does not start with any of the
    -- whitespace fn_iu_is_whitespace trims (all below 0x21); a multibyte first character
    -- passes (its first byte is 0xC2 or above). The conditions are one expression, ANDed
    -- inside "(...) IS TRUE" and led by the reserved-type test on the registration's
    -- column (equal to p_event_type byte for byte: the join's texteq under the database's
    -- default collation, which is deterministic): a condition that names no column of the
    -- scan would be moved by the planner into a Result node above it (one more node to
    -- build on every call).
    INSERT INTO public.event_outbox (id, event_domain, event_type, event_stream, delivery_lane, event_severity,
                                     event_subject_table, event_subject_ref, safe_payload)
    SELECT v_id, p_event_domain, p_event_type, p_event_stream, p_delivery_lane, p_event_severity,
           p_event_subject_table, p_event_subject_ref, p_safe_payload
      FROM public.event_type_registry r
     WHERE r.event_domain OPERATOR(pg_catalog.=) p_event_domain
       AND r.event_type OPERATOR(pg_catalog.=) p_event_type
       AND (r.event_type OPERATOR(pg_catalog.<>) ALL ('{queue_worker_silent,queue_worker_recovered}'::pg_catalog.text[])
            AND p_event_stream OPERATOR(pg_catalog.~>=~) '!'::pg_catalog.text
            AND pg_catalog.octet_length(p_event_stream) OPERATOR(pg_catalog.<=) 200
            AND p_delivery_lane OPERATOR(pg_catalog.=) ANY ('{immediate,standard,batch}'::pg_catalog.text[])
            AND p_event_severity OPERATOR(pg_catalog.=) ANY ('{debug,info,warning,critical}'::pg_catalog.text[])
            AND p_safe_payload OPERATOR(pg_catalog.@>) '{}'::pg_catalog.jsonb
            AND (p_event_subject_table OPERATOR(pg_catalog.~>=~) '!'::pg_catalog.text
                 AND pg_catalog.octet_length(p_event_subject_table) OPERATOR(pg_catalog.<=) 200
                 AND p_event_subject_ref OPERATOR(pg_catalog.~>=~) '!'::pg_catalog.text
                 AND pg_catalog.octet_length(p_event_subject_ref) OPERATOR(pg_catalog.<=) 1000) IS NOT FALSE) IS TRUE;
    IF NOT FOUND THEN
        -- The exact form: the rules as written (a blank subject stored as NULL, a name that
        -- is not blank accepted whatever it starts with). Planned in a session only once a
        -- call of it reaches here.
        INSERT INTO public.event_outbox (id, event_domain, event_type, event_stream, delivery_lane, event_severity,
                                         event_subject_table, event_subject_ref, safe_payload)
        SELECT v_id, p_event_domain, p_event_type, p_event_stream, p_delivery_lane, p_event_severity,
               CASE WHEN iu_core.fn_iu_is_whitespace(p_event_subject_table)
                    THEN NULL ELSE p_event_subject_table END,
               CASE WHEN iu_core.fn_iu_is_whitespace(p_event_subject_ref)
                    THEN NULL ELSE p_event_subject_ref END,
               p_safe_payload
          FROM public.event_type_registry r
         WHERE r.event_domain OPERATOR(pg_catalog.=) p_event_domain
           AND r.event_type OPERATOR(pg_catalog.=) p_event_type
           AND NOT iu_core.fn_iu_is_whitespace(p_event_stream)
           AND pg_catalog.octet_length(p_event_stream) OPERATOR(pg_catalog.<=) 200
           AND p_event_type OPERATOR(pg_catalog.<>) ALL ('{queue_worker_silent,queue_worker_recovered}'::pg_catalog.text[])
           AND p_delivery_lane OPERATOR(pg_catalog.=) ANY ('{immediate,standard,batch}'::pg_catalog.text[])
           AND p_event_severity OPERATOR(pg_catalog.=) ANY ('{debug,info,warning,critical}'::pg_catalog.text[])
           AND p_safe_payload OPERATOR(pg_catalog.@>) '{}'::pg_catalog.jsonb
           AND (pg_catalog.octet_length(p_event_subject_table) OPERATOR(pg_catalog.<=) 200
                AND pg_catalog.octet_length(p_event_subject_ref) OPERATOR(pg_catalog.<=) 1000) IS NOT FALSE;
        IF FOUND THEN
            RETURN v_id;
        END IF;
        -- A subject over its bound that is blank is not an error: like every blank subject
        -- it is stored as NULL. The exact form tests only the bounds (NULL passes), so this
        -- rare case costs a second call here instead of two more tests per subject in that
        -- statement. Qualified and exactly typed like the accepting path, which it rejoins.
        IF (pg_catalog.octet_length(p_event_subject_table) OPERATOR(pg_catalog.>) 200
                AND iu_core.fn_iu_is_whitespace(p_event_subject_table))
           OR (pg_catalog.octet_length(p_event_subject_ref) OPERATOR(pg_catalog.>) 1000
                AND iu_core.fn_iu_is_whitespace(p_event_subject_ref)) THEN
            RETURN public.fn_iu_emit_event(
                p_event_domain, p_event_type, p_event_stream, p_delivery_lane, p_event_severity,
                CASE WHEN iu_core.fn_iu_is_whitespace(p_event_subject_table) THEN NULL ELSE p_event_subject_table END,
                CASE WHEN iu_core.fn_iu_is_whitespace(p_event_subject_ref) THEN NULL ELSE p_event_subject_ref END,
                p_safe_payload);
        END IF;
        -- Nothing written: explain why. A broken argument rule raises in the refuse
        -- function; otherwise the type is not registered.
        PERFORM iu_core.fn_iu_emit_event_refuse(
            'fn_iu_emit_event',
            '{p_event_domain,p_event_type,p_event_stream,p_delivery_lane,p_event_severity,p_event_subject_table,p_event_subject_ref,p_safe_payload}',
            p_event_domain, p_event_type, p_event_stream, p_delivery_lane, p_event_severity,
            p_event_subject_table, p_event_subject_ref, p_safe_payload);
        RAISE EXCEPTION 'fn_iu_emit_event: event type %/% is not registered', p_event_domain, p_event_type
            USING ERRCODE = '22023',
                  HINT = format('Register it first: INSERT INTO event_type_registry (event_domain, event_type, description) VALUES (%L, %L, ''...'');',
                                p_event_domain, p_event_type);
    END IF;
    RETURN v_id;
END;
$$;
