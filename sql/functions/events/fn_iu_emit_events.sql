CREATE OR REPLACE FUNCTION public.fn_iu_emit_events(
    p_event_domain         text,
    p_event_type           text,
    p_event_streams        text[],
    p_delivery_lanes       text[]  DEFAULT NULL,
    p_event_severities     text[]  DEFAULT NULL,
    p_event_subject_tables text[]  DEFAULT NULL,
    p_event_subject_refs   text[]  DEFAULT NULL,
    p_safe_payloads        jsonb[] DEFAULT NULL
)
RETURNS uuid[]
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    -- Writes a set of events of one registered type in one call, all or nothing, and
    -- returns their ids in input order. Event i is (p_event_streams[i], p_delivery_lanes[i],
    -- p_event_severities[i], p_event_subject_tables[i], p_event_subject_refs[i],
    -- p_safe_payloads[i]), exactly fn_iu_emit_event's arguments of the same names, and meets
    -- exactly its rules. p_event_streams gives the number of events (at most 10,000; an
    -- empty array writes nothing); each other array is NULL, and every event takes
    -- fn_iu_emit_event's default (standard, info, no subject, {}), or has one element per
    -- event, NULL elements included (a NULL lane is refused, as by fn_iu_emit_event). A
    -- mixed set of types: one call per type in one transaction.
    --
    -- Refuses like fn_iu_emit_event (22023; 42501 for the stale-check's alert types), naming
    -- the first event that breaks a rule by its element (fn_iu_emit_events: p_event_streams[3]
    -- required; p_safe_payloads[7] carries denylisted keys at $.token), and 22023 for arrays
    -- of the wrong shape or length. Nothing is written unless every event is.
    --
    -- Algorithm: like fn_iu_emit_event, one INSERT ... SELECT, here from the type's
    -- registration row joined to the arrays (ROWS FROM (unnest, ...) WITH ORDINALITY), whose WHERE holds
    -- the rules the outbox's domains do not test; the domains test the rest, hygiene
    -- included, once per row, prepared once per call. The INSERT returns the ids; fewer ids
    -- than events means some event broke a rule: fn_iu_emit_event_refuse then walks the
    -- events in order and raises for the first (which rolls the INSERT back), or the type
    -- is unregistered. A dirty payload is refused by its domain inside the INSERT (23514):
    -- the block around the INSERT catches that and the same walk names the event. The
    -- block is one subtransaction a call, a few thousand instructions spread over the
    -- events, where testing hygiene here too would cost every event the rule twice. (Its
    -- INSERT gives the subtransaction an xid: a transaction that makes more than 64 calls
    -- overflows its backend's subtransaction cache and other sessions' snapshots then read
    -- pg_subtrans until it ends; pass fewer, larger sets.)
    --
    -- Ids: time-ordered like fn_iu_emit_event's (UUID version 7: milliseconds, version,
    -- the millisecond's fraction, variant), one time prefix per call, then the event's
    -- position (14 bits) and 48 random bits drawn once per call: the ids of one call sort
    -- in input order, so a route worker reading (txid, id) routes them in the order given,
    -- and each costs a few integer operations instead of a uuid of its own.
DECLARE
    v_n      integer := pg_catalog.cardinality(p_event_streams);
    v_ids    pg_catalog.uuid[];
    v_head   pg_catalog.text;
    v_tail   pg_catalog.int8;
    v_arrays constant pg_catalog.text[] := '{p_delivery_lanes,p_event_severities,p_event_subject_tables,p_event_subject_refs,p_safe_payloads}';
    v_len    integer;
    v_failed boolean := false;
BEGIN
    -- The shape of the arguments, per call (the rules of each event follow in the INSERT).
    IF v_n IS NULL THEN
        RAISE EXCEPTION 'fn_iu_emit_events: p_event_streams required'
            USING ERRCODE = '22023', HINT = 'Pass one stream per event: ARRAY[''s1'', ''s2''].';
    END IF;
    PERFORM iu_core.fn_iu_require_vector('fn_iu_emit_events', 'p_event_streams', p_event_streams);
    IF v_n OPERATOR(pg_catalog.>) 10000 THEN
        RAISE EXCEPTION 'fn_iu_emit_events: % events, at most 10000 per call', v_n
            USING ERRCODE = '22023', HINT = 'Emit in smaller sets (one transaction may hold several calls).';
    END IF;
    FOR i IN 1 .. 5 LOOP
        v_len := CASE i WHEN 1 THEN pg_catalog.cardinality(p_delivery_lanes)
                        WHEN 2 THEN pg_catalog.cardinality(p_event_severities)
                        WHEN 3 THEN pg_catalog.cardinality(p_event_subject_tables)
                        WHEN 4 THEN pg_catalog.cardinality(p_event_subject_refs)
                        ELSE pg_catalog.cardinality(p_safe_payloads) END;
        IF v_len IS NOT NULL AND v_len OPERATOR(pg_catalog.<>) v_n THEN
            RAISE EXCEPTION 'fn_iu_emit_events: % has % elements, p_event_streams %', v_arrays[i], v_len, v_n
                USING ERRCODE = '22023', HINT = 'Pass one element per event, or NULL for fn_iu_emit_event''s default for every event.';
        END IF;
    END LOOP;
    PERFORM iu_core.fn_iu_require_vector('fn_iu_emit_events', 'p_delivery_lanes', p_delivery_lanes);
    PERFORM iu_core.fn_iu_require_vector('fn_iu_emit_events', 'p_event_severities', p_event_severities);
    PERFORM iu_core.fn_iu_require_vector('fn_iu_emit_events', 'p_event_subject_tables', p_event_subject_tables);
    PERFORM iu_core.fn_iu_require_vector('fn_iu_emit_events', 'p_event_subject_refs', p_event_subject_refs);
    PERFORM iu_core.fn_iu_require_vector('fn_iu_emit_events', 'p_safe_payloads', p_safe_payloads);

    IF v_n OPERATOR(pg_catalog.>) 0 THEN
        -- The ids' shared parts (see the header): the first 16 hex digits as
        -- iu_core.fn_iu_event_new_id draws them, and the last 16 but for the position.
        -- (Every OPERATOR(...) has one precedence, applied left to right: the parentheses
        -- below are the arithmetic's.)
        v_head := pg_catalog.overlay(pg_catalog.lpad(pg_catalog.to_hex(CAST(pg_catalog.date_part('epoch'::pg_catalog.text, pg_catalog.clock_timestamp())
                                                                        OPERATOR(pg_catalog.*) 4096000::pg_catalog.float8 AS pg_catalog.int8)),
                                                  15, '0'::pg_catalog.text),
                                     '7'::pg_catalog.text, 13, 0);
        v_tail := (-9223372036854775807)::pg_catalog.int8 OPERATOR(pg_catalog.-) 1
                  OPERATOR(pg_catalog.+) CAST(pg_catalog.floor(pg_catalog.random() OPERATOR(pg_catalog.*) 281474976710656::pg_catalog.float8) AS pg_catalog.int8);
        BEGIN
            -- Each condition is written so that a NULL element fails it, except the
            -- subjects', for which NULL (and blank, of any length) is valid; an array
            -- passed as NULL stands for the default of every event.
            WITH written AS (
                INSERT INTO public.event_outbox (id, event_domain, event_type, event_stream, delivery_lane, event_severity,
                                                 event_subject_table, event_subject_ref, safe_payload)
                SELECT CAST(v_head OPERATOR(pg_catalog.||)
                            pg_catalog.to_hex(v_tail OPERATOR(pg_catalog.+) ((e.ord OPERATOR(pg_catalog.-) 1) OPERATOR(pg_catalog.*) 281474976710656::pg_catalog.int8))
                            AS pg_catalog.uuid),
                       p_event_domain, p_event_type, e.stream,
                       CASE WHEN p_delivery_lanes IS NULL THEN 'standard'::pg_catalog.text ELSE e.lane END,
                       CASE WHEN p_event_severities IS NULL THEN 'info'::pg_catalog.text ELSE e.severity END,
                       CASE WHEN iu_core.fn_iu_is_whitespace(e.subject_table) THEN NULL ELSE e.subject_table END,
                       CASE WHEN iu_core.fn_iu_is_whitespace(e.subject_ref) THEN NULL ELSE e.subject_ref END,
                       CASE WHEN p_safe_payloads IS NULL THEN '{}'::pg_catalog.jsonb ELSE e.payload END
                  FROM public.event_type_registry r,
                       ROWS FROM (pg_catalog.unnest(p_event_streams), pg_catalog.unnest(p_delivery_lanes),
                                  pg_catalog.unnest(p_event_severities), pg_catalog.unnest(p_event_subject_tables),
                                  pg_catalog.unnest(p_event_subject_refs), pg_catalog.unnest(p_safe_payloads))
                           WITH ORDINALITY AS e(stream, lane, severity, subject_table, subject_ref, payload, ord)
                 WHERE r.event_domain OPERATOR(pg_catalog.=) p_event_domain
                   AND r.event_type OPERATOR(pg_catalog.=) p_event_type
                   AND p_event_type OPERATOR(pg_catalog.<>) ALL ('{queue_worker_silent,queue_worker_recovered}'::pg_catalog.text[])
                   AND NOT iu_core.fn_iu_is_whitespace(e.stream)
                   AND pg_catalog.octet_length(e.stream) OPERATOR(pg_catalog.<=) 200
                   AND (p_delivery_lanes IS NULL OR e.lane OPERATOR(pg_catalog.=) ANY ('{immediate,standard,batch}'::pg_catalog.text[]))
                   AND (p_event_severities IS NULL OR e.severity OPERATOR(pg_catalog.=) ANY ('{debug,info,warning,critical}'::pg_catalog.text[]))
                   AND (p_safe_payloads IS NULL OR e.payload OPERATOR(pg_catalog.@>) '{}'::pg_catalog.jsonb)
                   AND (pg_catalog.octet_length(e.subject_table) OPERATOR(pg_catalog.<=) 200
                        OR iu_core.fn_iu_is_whitespace(e.subject_table)) IS NOT FALSE
                   AND (pg_catalog.octet_length(e.subject_ref) OPERATOR(pg_catalog.<=) 1000
                        OR iu_core.fn_iu_is_whitespace(e.subject_ref)) IS NOT FALSE
                RETURNING id
            )
            -- The ids sort in input order by construction (the position follows the
            -- prefix), so ORDER BY id is input order.
            SELECT pg_catalog.array_agg(w.id ORDER BY w.id) INTO v_ids FROM written w;
        EXCEPTION WHEN check_violation THEN
            -- A domain refused a row: a dirty payload (the WHERE keeps every other rule).
            -- The walk below names the first event that breaks a rule, or, if none does
            -- (not expected), the domain's error stands.
            v_failed := true;
        END;
        IF NOT v_failed AND pg_catalog.cardinality(v_ids) IS NOT DISTINCT FROM v_n THEN
            RETURN v_ids;
        END IF;
    END IF;

    -- Fewer events written than given (or none to write): say why. The first event that
    -- breaks a rule raises, in input order; for an empty set (its arrays empty or NULL),
    -- only the type's own rules, with a stand-in event of emit's defaults.
    FOR i IN 1 .. GREATEST(v_n, 1) LOOP
        PERFORM iu_core.fn_iu_emit_event_refuse(
            'fn_iu_emit_events',
            ARRAY['p_event_domain', 'p_event_type', pg_catalog.format('p_event_streams[%s]', i),
                  pg_catalog.format('p_delivery_lanes[%s]', i), pg_catalog.format('p_event_severities[%s]', i),
                  pg_catalog.format('p_event_subject_tables[%s]', i), pg_catalog.format('p_event_subject_refs[%s]', i),
                  pg_catalog.format('p_safe_payloads[%s]', i)],
            p_event_domain, p_event_type,
            CASE WHEN v_n OPERATOR(pg_catalog.=) 0 THEN 'stream'::pg_catalog.text ELSE p_event_streams[i] END,
            CASE WHEN p_delivery_lanes IS NULL OR v_n OPERATOR(pg_catalog.=) 0 THEN 'standard'::pg_catalog.text ELSE p_delivery_lanes[i] END,
            CASE WHEN p_event_severities IS NULL OR v_n OPERATOR(pg_catalog.=) 0 THEN 'info'::pg_catalog.text ELSE p_event_severities[i] END,
            p_event_subject_tables[i], p_event_subject_refs[i],
            CASE WHEN p_safe_payloads IS NULL OR v_n OPERATOR(pg_catalog.=) 0 THEN '{}'::pg_catalog.jsonb ELSE p_safe_payloads[i] END);
    END LOOP;
    IF NOT EXISTS (SELECT FROM public.event_type_registry r
                    WHERE r.event_domain OPERATOR(pg_catalog.=) p_event_domain
                      AND r.event_type OPERATOR(pg_catalog.=) p_event_type) THEN
        RAISE EXCEPTION 'fn_iu_emit_events: event type %/% is not registered', p_event_domain, p_event_type
            USING ERRCODE = '22023',
                  HINT = pg_catalog.format('Register it first: INSERT INTO event_type_registry (event_domain, event_type, description) VALUES (%L, %L, ''...'');',
                                           p_event_domain, p_event_type);
    END IF;
    IF v_n OPERATOR(pg_catalog.=) 0 THEN
        RETURN '{}'::pg_catalog.uuid[];
    END IF;
    -- Not expected: every rule holds and the type is registered, yet not every event was
    -- written. Refuse rather than return a partial set (the raise rolls the INSERT back).
    RAISE EXCEPTION 'fn_iu_emit_events: % of % events written', coalesce(pg_catalog.cardinality(v_ids), 0), v_n
        USING ERRCODE = 'XX000';
END;
$$;
