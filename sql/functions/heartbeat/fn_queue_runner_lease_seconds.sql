CREATE OR REPLACE FUNCTION iu_core.fn_queue_runner_lease_seconds()
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- How long a runner's hold on its row outlives its last beat: 30 s. A running iu-runner
    -- beats at least every 10 s (min(--poll-interval, 10 s)) between passes; a runner that
    -- stopped without handing its row back (a crash, a kill) is taken over by the next
    -- runner of that id within 30 s, far inside the row's stale threshold (180 s), so a
    -- restart never leaves a row that goes stale, and two live runners never share one.
    SELECT 30
$$;
