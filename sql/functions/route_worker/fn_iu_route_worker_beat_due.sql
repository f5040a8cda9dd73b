CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_beat_due(p_worker_name text, p_reason text)
RETURNS SETOF boolean
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_beat_due: THE rule for when a run beats its heartbeat. One row when a
    -- beat is due (none when not): the last beat is older than a quarter of the worker's
    -- expected cadence (15 s at the default 60 s: far inside any stale threshold, so the
    -- stale-check still sees a polling worker as fresh), no run has beaten it yet, its status
    -- is not ok, the gate state changed (p_reason, the payload's reason: NULL for an ungated
    -- run), or the row is missing (someone removed it: the beat re-registers it). Otherwise
    -- the row is only read: a worker polled every 100 ms does not write its heartbeat ten
    -- times a second.
    -- Inlinable SQL, so an idle run asks with one planned probe before it builds a payload.
    -- ---------------------------------------------------------------------------------------
    -- Written as "no fresh row": one index probe, no join (an idle poll asks it every time).
    SELECT true
     WHERE NOT EXISTS (SELECT 1 FROM public.queue_heartbeat h
                        WHERE h.executor_id = p_worker_name
                          AND h.ticks_total > 0 AND h.status = 'ok'
                          AND now() - h.last_beat_at < make_interval(secs => h.expected_cadence_seconds / 4.0)
                          AND (h.last_beat_payload->>'reason') IS NOT DISTINCT FROM p_reason)
$$;
