CREATE OR REPLACE FUNCTION iu_core.fn_queue_heartbeat_is_stale(p_last_beat_at timestamptz, p_stale_threshold_seconds integer,
                                            p_floor_seconds integer, p_now timestamptz)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    -- The staleness assessment, each rule once, read by fn_queue_stale_check and
    -- v_queue_health alike. Three one-expression SQL functions, so the planner inlines
    -- them into both (no call per executor on 10,000 rows). All times are passed in, so the
    -- check and the view judge one instant.
    --   fn_queue_heartbeat_is_stale   silent for longer than greatest(own threshold, global floor),
    --                                 or its beat is stamped ahead of the judging instant
    --                                 (fn_queue_heartbeat_is_ahead: the stamp proves nothing)
    --   fn_queue_heartbeat_gap_ratio  whole seconds of silence / expected cadence, truncated to
    --                                 2 decimals (the value alerts report)
    --   fn_queue_heartbeat_severity   decided on that reported value: warning below 10,
    --                                 critical from 10 (a payload never shows 10.00 with warning)
    --
    -- Written as a timestamp comparison (an interval subtraction and comparison per row
    -- costs ten times more on 10,000 executors). timestamptz - interval is STABLE (it reads
    -- the time zone), and a body must be no less stable than its function for the planner
    -- to inline it: hence STABLE, not IMMUTABLE.
    --
    -- The second half is fn_queue_heartbeat_is_ahead's rule written out, not called: an
    -- inlined body is parsed when the query that uses it is planned, in the reader's rights,
    -- and v_queue_health's reader (workflow_admin) may not name schema iu_core. The heartbeat
    -- tests hold the two equal (TestStaleCheck_ABeatStampedAheadOfTheClockIsStale).
    SELECT p_last_beat_at < p_now - make_interval(secs => greatest(p_stale_threshold_seconds, p_floor_seconds))
        OR p_last_beat_at > p_now + interval '60 seconds'
$$;
