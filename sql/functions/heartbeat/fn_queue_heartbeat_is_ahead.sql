CREATE OR REPLACE FUNCTION iu_core.fn_queue_heartbeat_is_ahead(p_last_beat_at timestamptz, p_now timestamptz)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    -- A beat stamped more than 60 seconds after the judging instant: the clock that stamped it
    -- was ahead of the one judging it (a server clock stepped back by NTP, a VM resumed with a
    -- wrong clock), so the stamp says nothing about when the executor last beat. Every beat is
    -- stamped with the server's now(), so without this rule a dead executor whose last beat
    -- was stamped two hours ahead would read fresh, and raise no alert, for two hours plus
    -- its threshold. The rule, read by the staleness assessment (fn_queue_heartbeat_is_stale:
    -- such a beat is stale, whatever its threshold; written out there, since the view's
    -- reader cannot name iu_core, and held equal to this by a test), the stale-check (which
    -- resets such a stamp to the clock, as if the executor beat when it was noticed: a live
    -- executor beats again within its cadence, a dead one is alerted one threshold later;
    -- until a check has run, v_queue_health reads such a row stale) and the runner's lease
    -- (fn_queue_runner_beat: such a stamp holds no lease, so a standby can take over from a
    -- dead runner).
    -- Why 60 seconds and not 0: a reader judges at its transaction's now() and can see beats
    -- that committed after it began (READ COMMITTED takes a snapshot per statement), so a
    -- beat a little ahead of the judge is normal; one more than a minute ahead is not, unless
    -- the reader's own transaction has been open that long (then the view reads such an
    -- executor stale: a false alarm, never a hidden silence). The stale-check judges at the
    -- clock (clock_timestamp()), so it never sees a live beat ahead.
    -- Inlinable SQL (one expression), as the other assessments are.
    SELECT p_last_beat_at > p_now + interval '60 seconds'
$$;
