CREATE OR REPLACE FUNCTION public.fn_job_enqueue(
    p_job_kind      text,
    p_event_domain  text,
    p_payload       jsonb       DEFAULT '{}'::jsonb,
    p_process_after timestamptz DEFAULT now(),
    p_dedupe_key    text        DEFAULT NULL,
    p_max_attempts  integer     DEFAULT 5
)
RETURNS uuid
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
-- Enqueues one job and returns its id; a live job (queued or running) with the same dedupe
-- key is returned instead of a duplicate.
DECLARE
    v_payload jsonb := coalesce(p_payload, '{}'::jsonb);
    v_after   timestamptz;
    v_id      uuid;
BEGIN
    PERFORM iu_core.fn_iu_require_name('fn_job_enqueue', 'p_job_kind', p_job_kind);
    PERFORM iu_core.fn_iu_require_name('fn_job_enqueue', 'p_event_domain', p_event_domain);
    PERFORM iu_core.fn_iu_payload_require_clean('fn_job_enqueue', 'p_payload', v_payload);
    v_after := iu_core.fn_job_require_process_after('fn_job_enqueue', p_process_after);
    PERFORM iu_core.fn_job_require_range('fn_job_enqueue', 'p_max_attempts', p_max_attempts, 1, 100);
    IF p_dedupe_key IS NOT NULL THEN
        PERFORM iu_core.fn_iu_require_name('fn_job_enqueue', 'p_dedupe_key', p_dedupe_key);
        PERFORM iu_core.fn_job_require_dedupe_horizon('fn_job_enqueue', v_after);
    END IF;

    -- The loop covers the race where the live job finishes between the conflict and the lookup.
    LOOP
        INSERT INTO public.job_queue (job_kind, event_domain, payload, process_after, max_attempts, dedupe_key)
        VALUES (p_job_kind, p_event_domain, v_payload, v_after, p_max_attempts, p_dedupe_key)
        ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL AND status IN ('queued', 'running') DO NOTHING
        RETURNING job_id INTO v_id;
        IF v_id IS NOT NULL THEN
            RETURN v_id;
        END IF;
        SELECT j.job_id INTO v_id FROM public.job_queue j
         WHERE j.dedupe_key = p_dedupe_key AND j.status IN ('queued', 'running');
        IF v_id IS NOT NULL THEN
            RETURN v_id;
        END IF;
    END LOOP;
END;
$$;
