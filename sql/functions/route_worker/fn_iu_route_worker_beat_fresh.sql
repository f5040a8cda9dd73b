CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_beat_fresh(p_worker_name text, p_reason text)
RETURNS SETOF boolean
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_beat_fresh: the worker's heartbeat row when it is fresh, i.e. no run
    -- owes it a beat (one row; none when a beat is due): some run has beaten it, its status
    -- is ok, its last beat is younger than a quarter of the worker's expected cadence (15 s
    -- at the default 60 s: far inside any stale threshold, so the stale-check still sees a
    -- polling worker as fresh), and it was beaten for the same gate state (p_reason, the
    -- payload's reason: NULL for an ungated run). THE beat rule: fn_iu_route_worker_beat_due
    -- is its negation (a missing row is due: the beat re-registers it). One index probe, no
    -- join: the idle probe asks it as EXISTS on every poll (one plan node), the writers ask
    -- fn_iu_route_worker_beat_due.
    -- The quarter is taken in float8 (an integer number of seconds times 0.25 is exact in
    -- binary, and make_interval rounds it to the same microseconds), not as numeric division
    -- (`/ 4.0`, the same value): numeric arithmetic and its cast cost the caught-up poll,
    -- which asks this row on every call, ~3 k instructions (about 1 %).
    -- Inlinable SQL, owner only.
    -- ---------------------------------------------------------------------------------------
    SELECT true
      FROM public.queue_heartbeat h
     WHERE h.executor_id = p_worker_name
       AND h.ticks_total > 0 AND h.status = 'ok'
       AND now() - h.last_beat_at < make_interval(secs => h.expected_cadence_seconds * 0.25::float8)
       AND (h.last_beat_payload->>'reason') IS NOT DISTINCT FROM p_reason
$$;
