CREATE OR REPLACE FUNCTION public.fn_job_enqueue_many(
    p_job_kind      text,
    p_event_domain  text,
    p_payloads      jsonb,
    p_process_after timestamptz DEFAULT now(),
    p_dedupe_keys   text[]      DEFAULT NULL,
    p_max_attempts  integer     DEFAULT 5
)
RETURNS uuid[]
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
-- Enqueues one job per element of the JSON array p_payloads (each an object, hygiene
-- checked), all of one kind and domain, in one INSERT. p_dedupe_keys, when given, has one
-- key (or NULL) per payload; a key with a live job of the same kind and domain, or repeated
-- inside the batch, yields the existing job instead of a duplicate; a key a live job of
-- another kind or domain holds refuses the whole batch (23505, fn_job_dedupe_refuse_other). Returns the job ids in input order (element i
-- of the result belongs to payload i). At most 10,000 payloads per call. The arguments are
-- all checked before anything is written, so a bad element writes nothing.
DECLARE
    v_n       integer;
    v_after   timestamptz;
    v_bad     record;
    v_ids     uuid[];
    v_missing integer;
    v_other   integer;   -- the first element whose key a live job of another kind or domain holds
BEGIN
    PERFORM iu_core.fn_iu_require_name('fn_job_enqueue_many', 'p_job_kind', p_job_kind);
    PERFORM iu_core.fn_iu_require_name('fn_job_enqueue_many', 'p_event_domain', p_event_domain);
    IF p_payloads IS NULL OR jsonb_typeof(p_payloads) <> 'array' THEN
        RAISE EXCEPTION 'fn_job_enqueue_many: p_payloads must be a JSON array of objects' USING ERRCODE = '22023',
            HINT = 'For example ''[{"ref": 1}, {"ref": 2}]''::jsonb.';
    END IF;
    -- The whole batch is bounded before anything reads it (8 MiB as jsonb: 10,000 payloads
    -- of ~800 bytes), so the hygiene pass below never works on more than that.
    IF pg_column_size(p_payloads) > 8388608 THEN
        RAISE EXCEPTION 'fn_job_enqueue_many: p_payloads is % bytes as jsonb, at most 8388608 allowed', pg_column_size(p_payloads)
            USING ERRCODE = '22023', HINT = 'Enqueue in smaller batches.';
    END IF;
    v_n := jsonb_array_length(p_payloads);
    PERFORM iu_core.fn_job_require_range('fn_job_enqueue_many', 'the number of payloads', v_n, 0, 10000);
    IF v_n = 0 THEN
        RETURN '{}'::uuid[];
    END IF;
    v_after := iu_core.fn_job_require_process_after('fn_job_enqueue_many', p_process_after);
    PERFORM iu_core.fn_job_require_range('fn_job_enqueue_many', 'p_max_attempts', p_max_attempts, 1, 100);
    IF p_dedupe_keys IS NOT NULL THEN
        PERFORM iu_core.fn_iu_require_vector('fn_job_enqueue_many', 'p_dedupe_keys', p_dedupe_keys);
        IF cardinality(p_dedupe_keys) <> v_n THEN
            RAISE EXCEPTION 'fn_job_enqueue_many: p_dedupe_keys has % elements, p_payloads %', cardinality(p_dedupe_keys), v_n
                USING ERRCODE = '22023', HINT = 'Pass one key (or NULL) per payload, or NULL for no keys.';
        END IF;
        PERFORM iu_core.fn_iu_require_name('fn_job_enqueue_many', format('p_dedupe_keys[%s]', k.ord), k.key)
           FROM unnest(p_dedupe_keys) WITH ORDINALITY AS k(key, ord)
          WHERE k.key IS NOT NULL;
        IF cardinality(array_remove(p_dedupe_keys, NULL)) > 0 THEN
            PERFORM iu_core.fn_job_require_dedupe_horizon('fn_job_enqueue_many', v_after);
        END IF;
    END IF;
    -- One pass over the whole array (the hygiene test looks at every depth, elements
    -- included); only when it fails is each element tested, so the first bad one gets the
    -- same message a single enqueue would give. The array itself may fail where no element
    -- does (the size and depth bounds are per payload, and the array is one level deeper
    -- and as large as all of them): then nothing is refused.
    IF p_payloads @? '$[*] ? (@.type() != "object")' OR NOT iu_core.fn_iu_payload_is_clean(p_payloads) THEN
        SELECT e.ord, e.value INTO v_bad
          FROM jsonb_array_elements(p_payloads) WITH ORDINALITY AS e(value, ord)
         WHERE jsonb_typeof(e.value) <> 'object' OR NOT iu_core.fn_iu_payload_is_clean(e.value)
         ORDER BY e.ord
         LIMIT 1;
        IF FOUND THEN
            PERFORM iu_core.fn_iu_payload_require_clean('fn_job_enqueue_many', format('p_payloads[%s]', v_bad.ord - 1), v_bad.value);
        END IF;
    END IF;

    IF p_dedupe_keys IS NULL THEN
        -- No keys, no conflicts: the ids are drawn first and returned as they are.
        v_ids := ARRAY(SELECT iu_core.fn_job_new_id() FROM generate_series(1, v_n));
        INSERT INTO public.job_queue (job_id, job_kind, event_domain, payload, process_after, max_attempts)
        SELECT v_ids[e.ord], p_job_kind, p_event_domain, e.value, v_after, p_max_attempts
          FROM jsonb_array_elements(p_payloads) WITH ORDINALITY AS e(value, ord);
        RETURN v_ids;
    END IF;

    -- Ids are drawn before the INSERT so each element can be matched to its row; an element
    -- whose key conflicted takes the id of the live job (inserted earlier in this batch, or
    -- already in the table).
    WITH input AS MATERIALIZED (
        SELECT e.ord, iu_core.fn_job_new_id() AS new_id, e.value AS payload,
               p_dedupe_keys[e.ord] AS dedupe_key
          FROM jsonb_array_elements(p_payloads) WITH ORDINALITY AS e(value, ord)
    ), ins AS (
        INSERT INTO public.job_queue (job_id, job_kind, event_domain, payload, process_after, max_attempts, dedupe_key)
        SELECT i.new_id, p_job_kind, p_event_domain, i.payload, v_after, p_max_attempts, i.dedupe_key
          FROM input i
         ORDER BY i.ord
        ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL AND status IN ('queued', 'running') DO NOTHING
        RETURNING job_id, dedupe_key
    )
    SELECT array_agg(coalesce(mine.job_id, batch.job_id, live.job_id) ORDER BY i.ord),
           min(i.ord) FILTER (WHERE live.job_kind <> p_job_kind OR live.event_domain <> p_event_domain)
      INTO v_ids, v_other
      FROM input i
      LEFT JOIN ins mine ON mine.job_id = i.new_id
      LEFT JOIN ins batch ON mine.job_id IS NULL AND batch.dedupe_key = i.dedupe_key
      LEFT JOIN public.job_queue live ON mine.job_id IS NULL AND batch.job_id IS NULL
                              AND live.dedupe_key = i.dedupe_key AND live.status IN ('queued', 'running');

    -- A key held by a live job of another kind or domain: refused, the whole batch with it
    -- (the INSERT above is undone with the error).
    IF v_other IS NOT NULL THEN
        PERFORM iu_core.fn_job_dedupe_refuse_other('fn_job_enqueue_many', p_dedupe_keys[v_other], p_job_kind, p_event_domain);
    END IF;
    -- Rare: a live job that blocked a key finished before the lookup. Enqueue those again,
    -- one by one, with the single-job rule (which loops on the same race).
    v_missing := array_position(v_ids, NULL);
    WHILE v_missing IS NOT NULL LOOP
        v_ids[v_missing] := public.fn_job_enqueue(p_job_kind, p_event_domain, p_payloads -> (v_missing - 1), v_after,
                                           p_dedupe_keys[v_missing], p_max_attempts);
        v_missing := array_position(v_ids, NULL);
    END LOOP;
    RETURN v_ids;
END;
$$;
