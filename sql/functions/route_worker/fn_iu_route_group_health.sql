CREATE OR REPLACE FUNCTION public.fn_iu_route_group_health(p_group_name text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_group_health(p_group_name DEFAULT NULL) -> jsonb
    -- A group of route workers as one logical worker: fn_iu_route_group_doc, plus
    --   waiting_on          during a rebalance, the members not at the boundary yet
    --   orphaned            members whose own runner has been silent past takeover_seconds
    --                       (the others route their buckets; their heartbeat alerts)
    --   backlog, backlog_capped, oldest_pending_age_seconds  the slowest member's (each
    --                       member's position moves over every event of the domain: its
    --                       backlog is every event after it, the others' included, capped
    --                       as a worker's)
    --   attempts            the group's audit counts by status (running counters)
    --   open_dead_letters   the group's
    --   members[]           each with its backlog, last run, last sign of life, window,
    --                       cursor sanity, lock holders and heartbeat (v_iu_route_worker_status)
    -- With a name: that group's document at the top level (P0002 when none); without: every
    -- group, {checked_at, group_count, groups[]}.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_groups jsonb;
BEGIN
    IF p_group_name IS NOT NULL AND NOT EXISTS (SELECT 1 FROM public.iu_route_group gr WHERE gr.group_name = p_group_name) THEN
        RAISE EXCEPTION 'fn_iu_route_group_health: group % does not exist', quote_literal(p_group_name)
            USING ERRCODE = 'P0002',
                  HINT = format('Create it with its first member: SELECT fn_iu_route_worker_register_member(%L, ''<member>'');', p_group_name);
    END IF;
    SELECT coalesce(jsonb_agg(iu_core.fn_iu_route_group_doc(g.group_name) || jsonb_build_object(
               'waiting_on', coalesce(ms.waiting_on, '[]'::jsonb),
               'orphaned', coalesce(ms.orphaned, '[]'::jsonb),
               'rebalancing_seconds', round(extract(epoch FROM now() - g.boundary_at)::numeric, 3),
               'backlog', ms.backlog,
               'backlog_capped', ms.backlog_capped,
               'oldest_pending_age_seconds', ms.oldest_pending_age_seconds,
               'attempts', (SELECT coalesce(jsonb_object_agg(t.status, t.attempts ORDER BY t.status), '{}'::jsonb)
                              FROM public.iu_route_attempt_tally t WHERE t.worker_name = g.group_name),
               'open_dead_letters', (SELECT count(*) FROM public.iu_route_dead_letter d
                                      WHERE d.worker_name = g.group_name AND d.resolved_at IS NULL),
               'members', coalesce(ms.members, '[]'::jsonb))
               ORDER BY g.group_name), '[]'::jsonb)
      INTO v_groups
      FROM public.iu_route_group g
      LEFT JOIN LATERAL (
           SELECT jsonb_agg(x.name ORDER BY x.name) FILTER (WHERE x.behind) AS waiting_on,
                  jsonb_agg(x.name ORDER BY x.name) FILTER (WHERE x.orphaned) AS orphaned,
                  max(x.backlog) AS backlog,
                  bool_or(x.backlog_capped) AS backlog_capped,
                  max(x.oldest_pending_age_seconds) AS oldest_pending_age_seconds,
                  jsonb_agg(x.doc ORDER BY x.bucket_lo, x.next_lo, x.name) AS members
             FROM (SELECT s.worker_name AS name, gm.bucket_lo, gm.next_lo, s.backlog, s.backlog_capped,
                          s.oldest_pending_age_seconds,
                          g.boundary_snapshot IS NOT NULL
                            AND (s.window_snapshot IS NOT NULL OR s.done_snapshot::text IS DISTINCT FROM g.boundary_snapshot::text) AS behind,
                          (h.executor_id IS NULL OR h.paused_at IS NOT NULL
                            OR h.last_beat_at < now() - make_interval(secs => g.takeover_seconds)) AS orphaned,
                          jsonb_build_object(
                              'member', s.worker_name,
                              'buckets', jsonb_build_array(gm.bucket_lo, gm.bucket_hi),
                              'next_buckets', CASE WHEN gm.next_lo IS NOT NULL THEN jsonb_build_array(gm.next_lo, gm.next_hi) END,
                              'leaving', gm.leaving,
                              'at_boundary', CASE WHEN g.boundary_snapshot IS NOT NULL THEN
                                                  s.window_snapshot IS NULL AND s.done_snapshot::text = g.boundary_snapshot::text END,
                              'orphaned', (h.executor_id IS NULL OR h.paused_at IS NOT NULL
                                           OR h.last_beat_at < now() - make_interval(secs => g.takeover_seconds)),
                              'runs_total', s.runs_total,
                              'events_seen', s.events_seen,
                              'attempts_written', s.attempts_written,
                              'last_run_at', s.last_run_at,
                              'last_seen_at', s.last_seen_at,
                              'backlog', s.backlog,
                              'backlog_capped', s.backlog_capped,
                              'oldest_pending_age_seconds', s.oldest_pending_age_seconds,
                              'window_open', s.window_open,
                              'cursor_ok', s.cursor_ok,
                              'cursor_hint', s.cursor_hint,
                              'lock_held_by', s.lock_held_by,
                              'heartbeat', CASE WHEN h.executor_id IS NOT NULL THEN jsonb_build_object(
                                                'last_beat_at', h.last_beat_at,
                                                'age_seconds', round(extract(epoch FROM now() - h.last_beat_at)::numeric, 3),
                                                'ticks_total', h.ticks_total,
                                                'paused', h.paused_at IS NOT NULL) END) AS doc
                     FROM public.iu_route_worker_cursor cur
                     JOIN public.iu_route_group_member gm ON gm.member_name = cur.worker_name
                     JOIN public.v_iu_route_worker_status s ON s.worker_name = cur.worker_name
                     LEFT JOIN public.queue_heartbeat h ON h.executor_id = s.worker_name
                    WHERE cur.group_name = g.group_name) x) ms ON true
     WHERE p_group_name IS NULL OR g.group_name = p_group_name;

    IF p_group_name IS NOT NULL THEN
        RETURN (v_groups->0) || jsonb_build_object('checked_at', now());
    END IF;
    RETURN jsonb_build_object('checked_at', now(), 'group_count', jsonb_array_length(v_groups), 'groups', v_groups);
END;
$$;
