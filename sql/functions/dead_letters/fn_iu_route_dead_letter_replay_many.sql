CREATE OR REPLACE FUNCTION public.fn_iu_route_dead_letter_replay_many(p_filter jsonb, p_limit integer DEFAULT 1000)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
-- Replays up to p_limit (1..10000) open route dead letters matching p_filter, oldest
-- failure first, each with fn_iu_route_dead_letter_replay (which writes the attempt and
-- resolves the row, or records the new failure and leaves it open). Returns
-- {"selected": n, "resolved": n, "still_open": n, "statuses": {status: count},
--  "more": true while matching open ones remain (failed-again rows included)}.
DECLARE
    f          record;
    v_id       uuid;
    v_res      jsonb;
    v_selected integer := 0;
    v_resolved integer := 0;
    v_statuses jsonb := '{}'::jsonb;
    v_more     boolean;
BEGIN
    SELECT * INTO f FROM iu_core.fn_queue_dead_letter_filter('fn_iu_route_dead_letter_replay_many', p_filter, 'route_key');
    PERFORM iu_core.fn_job_require_range('fn_iu_route_dead_letter_replay_many', 'p_limit', p_limit, 1, 10000);
    FOR v_id IN
        SELECT d.id FROM public.iu_route_dead_letter d
         WHERE d.resolved_at IS NULL
           AND iu_core.fn_iu_route_dead_letter_matches(d, f.subject, f.error_code, f.failed_after, f.failed_before)
         ORDER BY d.last_failed_at, d.id
         LIMIT p_limit
           FOR UPDATE SKIP LOCKED
    LOOP
        v_selected := v_selected + 1;
        v_res := public.fn_iu_route_dead_letter_replay(v_id);
        IF (v_res ->> 'resolved')::boolean THEN
            v_resolved := v_resolved + 1;
        END IF;
        v_statuses := v_statuses || jsonb_build_object(coalesce(v_res ->> 'status', v_res ->> 'reason', 'unknown'),
            coalesce((v_statuses ->> coalesce(v_res ->> 'status', v_res ->> 'reason', 'unknown'))::integer, 0) + 1);
    END LOOP;
    SELECT EXISTS (
        SELECT 1 FROM public.iu_route_dead_letter d
         WHERE d.resolved_at IS NULL
           AND iu_core.fn_iu_route_dead_letter_matches(d, f.subject, f.error_code, f.failed_after, f.failed_before)) INTO v_more;
    RETURN jsonb_build_object('selected', v_selected, 'resolved', v_resolved, 'still_open', v_selected - v_resolved,
                              'statuses', v_statuses, 'more', v_more);
END;
$$;
