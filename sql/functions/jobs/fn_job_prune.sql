CREATE OR REPLACE FUNCTION public.fn_job_prune(p_limit integer DEFAULT 10000)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
-- Deletes up to p_limit finished jobs, oldest first, that finished more than
-- queue.job.retention_seconds ago: succeeded ones, and dead ones whose row is already in
-- job_dead_letter (the dead letter keeps the whole job, so nothing is lost). Queued and
-- running jobs and the dead letters themselves are never touched. Retention: a
-- non-negative integer of seconds in dot_config (default 86400 when the key is missing);
-- 0 keeps finished jobs forever; any other value also keeps everything (a typo must not
-- delete) and is reported in "invalid_retention". Rows locked by another session are
-- skipped. Returns {"pruned": n, "retention_seconds": s, "more": true when the limit was
-- reached}; call again (the runner does, on its reap cadence) to go on.
DECLARE
    v_raw    text;
    v_secs   bigint;
    v_pruned bigint;
BEGIN
    PERFORM iu_core.fn_job_require_range('fn_job_prune', 'p_limit', p_limit, 1, 1000000);
    SELECT c.value INTO v_raw FROM public.dot_config c WHERE c.key = 'queue.job.retention_seconds';
    IF NOT FOUND THEN
        v_secs := 86400;
    ELSIF v_raw ~ '^[[:space:]]*[0-9]{1,10}[[:space:]]*$' THEN
        v_secs := btrim(v_raw, E' \t\r\n\f\x0B')::bigint;
    ELSE
        RETURN jsonb_build_object('pruned', 0, 'retention_seconds', NULL, 'invalid_retention', v_raw);
    END IF;
    IF v_secs = 0 THEN
        RETURN jsonb_build_object('pruned', 0, 'retention_seconds', 0, 'more', false);
    END IF;

    WITH victims AS (
        SELECT j.job_id FROM public.job_queue j
         WHERE j.status IN ('succeeded', 'dead')
           AND j.finished_at < now() - make_interval(secs => v_secs)
           AND (j.status = 'succeeded' OR EXISTS (SELECT 1 FROM public.job_dead_letter d WHERE d.job_id = j.job_id))
         ORDER BY j.finished_at
         LIMIT p_limit
           FOR UPDATE SKIP LOCKED
    )
    DELETE FROM public.job_queue j USING victims v WHERE j.job_id = v.job_id;
    GET DIAGNOSTICS v_pruned = ROW_COUNT;
    RETURN jsonb_build_object('pruned', v_pruned, 'retention_seconds', v_secs, 'more', v_pruned >= p_limit);
END;
$$;
