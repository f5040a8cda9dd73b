-- ---------------------------------------------------------------------------------------
-- v_iu_route_worker_status: THE worker-health computation. fn_iu_route_worker_health and
-- v_queue_health's cursor rows read it, so gates, backlog, dead letters and cursor sanity
-- are computed one way. The backlog of a cursor from another cluster is NULL (its
-- snapshots mean nothing here); cursor_ok is false and cursor_hint gives the fix.
-- ---------------------------------------------------------------------------------------
CREATE OR REPLACE VIEW public.v_iu_route_worker_status AS
SELECT cur.worker_name,
       cur.event_domain,
       g.routes_enabled,
       g.worker_enabled,
       g.routes_enabled AND g.worker_enabled AS gates_open,
       cur.last_run_at,
       round(extract(epoch FROM now() - cur.last_run_at)::numeric, 3) AS last_run_age_seconds,
       -- The last sign of life: an idle run writes no cursor (last_run_at stays), only a
       -- rate-limited heartbeat beat, so the newer of the two (a beat counts once a run
       -- has beaten it: registration alone is not a run).
       CASE WHEN hb.ticks_total > 0 THEN greatest(cur.last_run_at, hb.last_beat_at) ELSE cur.last_run_at END
                                                            AS last_seen_at,
       cur.runs_total,
       cur.events_seen,
       cur.attempts_written,
       cur.dead_lettered,
       pend.pending AS backlog,
       pend.capped AS backlog_capped,
       pend.oldest_created_at AS oldest_pending_created_at,
       round(extract(epoch FROM greatest(now(), pend.oldest_created_at) - pend.oldest_created_at)::numeric, 3) AS oldest_pending_age_seconds,   -- never negative (an event committed after now() is age 0); NULL without a backlog
       dl.open_count AS open_dead_letters,
       dl.oldest AS oldest_open_dead_letter_at,
       cur.window_snapshot IS NOT NULL AS window_open,
       k.problem IS NULL AND NOT k.foreign_rows AS cursor_ok,
       k.problem AS cursor_problem,
       k.foreign_rows AS foreign_txid_rows,
       CASE WHEN k.problem IS NOT NULL THEN
                format('cursor recorded in another cluster (IU002): SELECT fn_iu_route_worker_reset_cursor(%L);', cur.worker_name)
            WHEN k.foreign_rows THEN
                'event_outbox holds rows with transaction ids from another cluster (IU002): SELECT fn_iu_event_outbox_rebase_foreign_txids();'
       END AS cursor_hint,
       cur.last_created_at,
       cur.last_event_id,
       cur.done_snapshot,
       cur.window_snapshot,
       cur.window_txid,
       cur.window_event_id,
       cur.system_identifier,
       cur.last_run_summary,
       -- Who holds the worker's lock right now ('[]': nobody): a run, a reset, or any session
       -- that took its advisory lock.
       iu_core.fn_iu_route_worker_lock_holders(cur.lock_id) AS lock_held_by,
       -- Since when a closed gate keeps waiting events from this worker (NULL: gates open,
       -- or nothing waits): the later of the oldest waiting event and the moment the first
       -- closed gate was last set (a missing key has no such moment: the oldest event then).
       CASE WHEN NOT (g.routes_enabled AND g.worker_enabled) AND pend.pending > 0 THEN
            greatest(pend.oldest_created_at,
                     (SELECT min(c.updated_at) FROM public.dot_config c
                       WHERE c.key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled')
                         AND NOT public.fn_iu_gate_open(c.value)))
       END AS gated_waiting_since
  FROM public.iu_route_worker_cursor cur
  LEFT JOIN public.queue_heartbeat hb ON hb.executor_id = cur.worker_name
 CROSS JOIN LATERAL (SELECT public.fn_iu_core_routes_enabled() IS TRUE AS routes_enabled,
                            public.fn_iu_route_worker_enabled() IS TRUE AS worker_enabled) g
 CROSS JOIN LATERAL (SELECT iu_core.fn_iu_route_worker_cursor_problem(cur) AS problem,
                            iu_core.fn_iu_route_worker_foreign_txids(cur.event_domain) AS foreign_rows) k
  LEFT JOIN LATERAL (SELECT pp.pending, pp.oldest_created_at, pp.capped
                       FROM iu_core.fn_iu_route_worker_pending(cur.event_domain,
                           ROW(cur.done_snapshot, cur.window_snapshot, cur.window_txid, cur.window_event_id)::iu_core.iu_route_window) pp
                      WHERE k.problem IS NULL) pend ON true
 CROSS JOIN LATERAL (SELECT count(*) AS open_count, min(d.last_failed_at) AS oldest
                       FROM public.iu_route_dead_letter d
                      WHERE d.worker_name = cur.worker_name AND d.resolved_at IS NULL) dl;

COMMENT ON VIEW public.v_iu_route_worker_status IS
    'Route workers: cursor, gates, counters, backlog (committed events not yet routed), open dead letters, cursor sanity (IU002).';
