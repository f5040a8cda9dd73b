CREATE OR REPLACE FUNCTION public.fn_iu_route_worker_health(p_worker_name text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_health(p_worker_name DEFAULT NULL) -> jsonb
    -- v_iu_route_worker_status as JSON, plus what holds each worker's windows open (pid, age)
    -- and its heartbeat. With a worker name, its document at the top level (and in
    -- "workers"); without one, every worker. Unknown worker -> P0002.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_routes_on boolean;
    v_worker_on boolean;
    v_gates     jsonb;
    v_workers   jsonb;
BEGIN
    v_routes_on := public.fn_iu_core_routes_enabled() IS TRUE;
    v_worker_on := public.fn_iu_route_worker_enabled() IS TRUE;
    IF p_worker_name IS NOT NULL THEN
        PERFORM iu_core.fn_iu_route_worker_require_name('fn_iu_route_worker_health', p_worker_name);
        IF NOT EXISTS (SELECT 1 FROM public.iu_route_worker_cursor cur WHERE cur.worker_name = p_worker_name) THEN
            PERFORM iu_core.fn_iu_route_worker_not_registered('fn_iu_route_worker_health', p_worker_name);
        END IF;
    END IF;

    v_gates := jsonb_build_object('iu_core.routes_enabled', v_routes_on,
                                  'iu_core.route_worker_enabled', v_worker_on,
                                  'open', v_routes_on AND v_worker_on);

    SELECT coalesce(jsonb_agg(jsonb_build_object(
               'worker', s.worker_name,
               'event_domain', s.event_domain,
               'gates', v_gates,
               'runs_total', s.runs_total,
               'last_run_at', s.last_run_at,
               'last_run_age_seconds', s.last_run_age_seconds,
               'events_seen', s.events_seen,
               'attempts_written', s.attempts_written,
               'dead_lettered', s.dead_lettered,
               'backlog', s.backlog,
               'backlog_capped', s.backlog_capped,
               'oldest_pending_created_at', s.oldest_pending_created_at,
               'oldest_pending_age_seconds', s.oldest_pending_age_seconds,
               'open_dead_letters', s.open_dead_letters,
               'oldest_open_dead_letter_at', s.oldest_open_dead_letter_at,
               'window_open', s.window_open,
               'held_open_count', jsonb_array_length(hold.holders),
               'held_open_by', hold.holders,
               'cursor_ok', s.cursor_ok,
               'foreign_txid_rows', s.foreign_txid_rows,
               'cursor_hint', s.cursor_hint,
               'lock_held_by', s.lock_held_by,
               'gated_waiting_since', s.gated_waiting_since,
               'heartbeat', (SELECT jsonb_build_object('last_beat_at', h.last_beat_at,
                                                       'age_seconds', round(extract(epoch FROM now() - h.last_beat_at)::numeric, 3),
                                                       'ticks_total', h.ticks_total,
                                                       'status', h.status,
                                                       'stale_threshold_seconds', h.stale_threshold_seconds,
                                                       'last_beat_payload', h.last_beat_payload)
                               FROM public.queue_heartbeat h WHERE h.executor_id = s.worker_name),
               'last_run_summary', s.last_run_summary) ORDER BY s.worker_name), '[]'::jsonb)
      INTO v_workers
      FROM public.v_iu_route_worker_status s
     CROSS JOIN LATERAL (
           -- a cursor from another cluster: its snapshots name no transaction of ours
           SELECT CASE WHEN s.cursor_problem IS NULL
                       THEN iu_core.fn_iu_route_worker_holders(s.done_snapshot, s.window_snapshot)
                       ELSE '[]'::jsonb END AS holders) hold
     WHERE p_worker_name IS NULL OR s.worker_name = p_worker_name;

    IF p_worker_name IS NOT NULL THEN
        -- One worker: its document at the top level (and in "workers" for uniform readers).
        RETURN (v_workers->0) || jsonb_build_object('checked_at', now(), 'workers', v_workers);
    END IF;
    RETURN jsonb_build_object('checked_at', now(), 'gates', v_gates,
                              'worker_count', jsonb_array_length(v_workers), 'workers', v_workers);
END;
$$;
