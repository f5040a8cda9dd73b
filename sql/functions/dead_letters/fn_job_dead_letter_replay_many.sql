CREATE OR REPLACE FUNCTION public.fn_job_dead_letter_replay_many(p_filter jsonb, p_limit integer DEFAULT 1000)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
-- Replays up to p_limit (1..10000) open job dead letters matching p_filter, oldest failure
-- first, each with fn_job_dead_letter_replay (a fresh job; the dead letter resolved).
-- Returns {"selected": n, "replayed": n, "more": true while matching open ones remain that it
-- can replay, "held": matching open ones passed by because a live job of another kind or
-- domain holds their dedupe key (fn_job_dedupe_held_elsewhere; replayable once it is free)}.
DECLARE
    f          record;
    v_id       uuid;
    v_selected integer := 0;
    v_replayed integer := 0;
    v_more     boolean;
    v_held     bigint;
BEGIN
    SELECT * INTO f FROM iu_core.fn_queue_dead_letter_filter('fn_job_dead_letter_replay_many', p_filter, 'job_kind');
    PERFORM iu_core.fn_job_require_range('fn_job_dead_letter_replay_many', 'p_limit', p_limit, 1, 10000);
    FOR v_id IN
        SELECT d.id FROM public.job_dead_letter d
         WHERE d.resolved_at IS NULL
           AND iu_core.fn_job_dead_letter_matches(d, f.subject, f.error_code, f.failed_after, f.failed_before)
           AND NOT EXISTS (SELECT 1 FROM iu_core.fn_job_dedupe_held_elsewhere(d.job_snapshot ->> 'dedupe_key', d.job_kind, d.event_domain))
         ORDER BY d.last_failed_at, d.id
         LIMIT p_limit
           FOR UPDATE SKIP LOCKED
    LOOP
        v_selected := v_selected + 1;
        IF (public.fn_job_dead_letter_replay(v_id) ->> 'replayed')::boolean THEN
            v_replayed := v_replayed + 1;
        END IF;
    END LOOP;
    -- more: matching open ones this loop can still replay; held: those it passes by because
    -- a live job of another kind or domain holds their dedupe key (replayable once it is
    -- free), so a caller that repeats the call until more is false stops.
    SELECT count(*) FILTER (WHERE NOT h.held) > 0, count(*) FILTER (WHERE h.held)
      INTO v_more, v_held
      FROM public.job_dead_letter d
     CROSS JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM iu_core.fn_job_dedupe_held_elsewhere(d.job_snapshot ->> 'dedupe_key', d.job_kind, d.event_domain)) AS held) h
     WHERE d.resolved_at IS NULL
       AND iu_core.fn_job_dead_letter_matches(d, f.subject, f.error_code, f.failed_after, f.failed_before);
    RETURN jsonb_build_object('selected', v_selected, 'replayed', v_replayed, 'more', v_more, 'held', v_held);
END;
$$;
