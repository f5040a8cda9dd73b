CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_beat_due(p_worker_name text, p_reason text)
RETURNS SETOF boolean
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_beat_due: when a run beats its heartbeat. One row when a beat is due
    -- (none when not): the worker's heartbeat is not fresh (fn_iu_route_worker_beat_fresh,
    -- THE rule: the last beat is older than a quarter of the worker's expected cadence, no
    -- run has beaten it yet, its status is not ok, the gate state changed (p_reason, the
    -- payload's reason: NULL for an ungated run), or the row is missing: someone removed it,
    -- and the beat re-registers it). Otherwise the row is only read: a worker polled every
    -- 100 ms does not write its heartbeat ten times a second.
    -- Inlinable SQL, so a run asks with one planned probe before it builds a payload (the
    -- idle probe asks the fresh row itself: one plan node less).
    -- ---------------------------------------------------------------------------------------
    SELECT true
     WHERE NOT EXISTS (SELECT 1 FROM iu_core.fn_iu_route_worker_beat_fresh(p_worker_name, p_reason))
$$;
