CREATE OR REPLACE FUNCTION public.fn_queue_stale_check()
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- Every wait bounded: writing an alert waits for nothing but a lock a retention drop holds.
SET lock_timeout = '5s'
AS $$
-- No caller can suppress another's alerts. The check locks each stale executor's
-- alert-state row (queue_stale_alert) to decide and record its alert, so two checks never
-- alert one silence twice. A session that ran a stale-check in a transaction it keeps open
-- holds those rows until it ends (and its rollback erases the alerts it wrote): before,
-- every other check skipped them ("skipped_locked") and no alert went out while it lived.
-- Now a check decides in three phases:
--   0. checks that are running take turns (queue_stale_check_serial's row, waited for at
--      most 1 s: a running check takes milliseconds);
--   1. every row it can lock at once (SKIP LOCKED), as before;
--   2. the rows another session still holds (it keeps a check's transaction open): alerted
--      anyway, from the committed state, within this call; what went out is kept in
--      queue_stale_alert_contended (append-only, never waits) and the holders are named
--      ("contended", "blocked_by", and in each such alert's payload).
-- The next check that holds a row folds its contended alerts in, so the window rule (no
-- repeat inside 2 x threshold) and the recovery report see them. Phase 2 may repeat an alert
-- another session's open check also wrote: a duplicate is the price of a held check, a
-- missing alert is not. Recoveries wait for a check that holds the row.
--
-- The check judges by the clock, not by now(): now() is when the caller's transaction began,
-- and a caller may call the check in a transaction it opened before an executor fell silent
-- (or make its statement wait, on a lock or a sleep, before the call). Judged at that moment
-- the silent executor looks fresh: the check would report it recovered (reason
-- threshold_raised) and clear its open alert, and the next honest check would count the
-- silence as already reported and stay quiet for up to 2 x threshold. So v_now is
-- clock_timestamp(), read again once this check has its turn (it may wait up to 1 s for
-- another check), and a silence with no beat since its alert is reported ended only when
-- v_now is not earlier than that alert.
--
-- A beat stamped ahead of the clock (more than 60 s: fn_queue_heartbeat_is_ahead, the server's
-- clock stepped back since) is reset to the clock, as if the executor beat when the check
-- noticed it (ahead_reset counts them): a live executor raises nothing, a dead one is alerted
-- one threshold later. A stamp the check cannot reset (a session holds the heartbeat row) is
-- stale whatever its age, alerted with its silence counted from when it is noticed, and that
-- silence ends only with a new beat (any other stamp: one written after the step is earlier
-- than the stamp that was ahead).
DECLARE
    v_floor      integer;
    v_now        timestamptz := clock_timestamp();
    v_checked    bigint;
    v_paused     bigint;
    v_candidates bigint;
    v_missing    bigint;             -- executors with no alert-state row (see the repair below)
    v_turn       boolean := false;   -- this check has the serial lock
    v_locked     bigint := 0;
    v_stale      bigint := 0;
    v_emitted    bigint := 0;
    v_suppressed bigint := 0;
    v_escalated  bigint := 0;
    v_recovered  bigint := 0;
    v_reset      bigint := 0;            -- beats stamped ahead of the clock, reset to it
    v_alerts     jsonb := '[]'::jsonb;
    r            record;
    v_threshold  integer;
    v_age        bigint;
    v_ratio      numeric;
    v_severity   text;
    v_since      timestamptz;
    v_event      uuid;
    v_window     interval;
    v_window_sev text;
    v_open       boolean;
    v_beaten     boolean;            -- it beat since its open alert
    v_kind       text;
    v_phase      integer;
    v_free       boolean;            -- this check holds the row: it records the alert state
    v_done       text[] := '{}';     -- executors decided
    v_rest       text[];             -- candidates another session held
    v_contended  bigint := 0;
    v_blocked    jsonb := '[]'::jsonb;
    c            refcursor;
    x            record;
BEGIN
    v_floor := iu_core.fn_queue_heartbeat_floor_seconds();

    -- The fresh path: one aggregate, no per-row calls. Plain reads: the committed beats.
    SELECT count(*) FILTER (WHERE h.paused_at IS NULL),
           count(*) FILTER (WHERE h.paused_at IS NOT NULL),
           count(*) FILTER (WHERE h.paused_at IS NULL
                              AND (a.alerted_at IS NOT NULL
                                   OR iu_core.fn_queue_heartbeat_is_stale(h.last_beat_at, h.stale_threshold_seconds, v_floor, v_now))),
           count(*) FILTER (WHERE a.executor_id IS NULL)
      INTO v_checked, v_paused, v_candidates, v_missing
      FROM public.queue_heartbeat h
      LEFT JOIN public.queue_stale_alert a ON a.executor_id = h.executor_id;

    IF v_candidates > 0 THEN
      -- One check at a time decides: a running check waits for another at most 1 s (they take
      -- milliseconds), so running checks never skip each other's rows; a check that cannot
      -- have it in 1 s (a session keeps a check's transaction open) goes on without it.
      BEGIN
          PERFORM set_config('lock_timeout', '1s', true);
          PERFORM 1 FROM public.queue_stale_check_serial s FOR UPDATE;
          v_turn := true;
      EXCEPTION WHEN lock_not_available THEN
          NULL;
      END;
      PERFORM set_config('lock_timeout', '5s', true);
      -- Judged from when this check has its turn: an alert the check before it wrote is
      -- then never later than v_now.
      v_now := clock_timestamp();
      -- The alert state of an executor is its queue_stale_alert row, made by the heartbeat
      -- table's AFTER INSERT trigger. A heartbeat row that came in without it (a data-only
      -- restore with --disable-triggers, logical replication under session_replication_role
      -- = replica) has none, and both phases below read only executors that have one: such an
      -- executor was counted a candidate and never visited, silent with no alert, reported
      -- only as skipped_locked. The missing rows are made here, under the serial lock (two
      -- checks never insert the same row at once, so this never waits on another's insert);
      -- a check that did not get its turn leaves them to the one that has it.
      IF v_missing > 0 AND v_turn THEN
          INSERT INTO public.queue_stale_alert (executor_id)
          SELECT h.executor_id FROM public.queue_heartbeat h
           WHERE NOT EXISTS (SELECT 1 FROM public.queue_stale_alert a WHERE a.executor_id = h.executor_id)
          ON CONFLICT (executor_id) DO NOTHING;
      END IF;
      FOR v_phase IN 1..2 LOOP
        IF v_phase = 1 THEN
            OPEN c FOR
                SELECT h.executor_id, h.executor_kind, h.last_beat_at, h.expected_cadence_seconds,
                       h.stale_threshold_seconds, a.silent_since, a.alerted_at, a.alerted_severity,
                       a.alerted_beat_at, a.last_warning_at, a.last_critical_at
                  FROM public.queue_stale_alert a
                  JOIN public.queue_heartbeat h ON h.executor_id = a.executor_id
                 WHERE h.paused_at IS NULL
                   AND (a.alerted_at IS NOT NULL
                        OR iu_core.fn_queue_heartbeat_is_stale(h.last_beat_at, h.stale_threshold_seconds, v_floor, v_now))
                 ORDER BY a.executor_id
                   FOR UPDATE OF a SKIP LOCKED;
            v_free := true;
        ELSE
            -- The candidates not decided yet: another session held their rows.
            v_rest := ARRAY(
                SELECT h.executor_id
                  FROM public.queue_stale_alert a
                  JOIN public.queue_heartbeat h ON h.executor_id = a.executor_id
                 WHERE h.paused_at IS NULL
                   AND (a.alerted_at IS NOT NULL
                        OR iu_core.fn_queue_heartbeat_is_stale(h.last_beat_at, h.stale_threshold_seconds, v_floor, v_now))
                   AND NOT (h.executor_id = ANY (v_done))
                 ORDER BY 1);
            EXIT WHEN cardinality(v_rest) = 0;
            -- Held by a session that keeps its transaction open (every running check holds
            -- the serial lock, so these are not a running check's when this one has it):
            -- named, and alerted anyway from the committed state, locking nothing.
            SELECT coalesce(jsonb_agg(iu_core.fn_iu_session_describe(k.pid) ORDER BY k.pid), '[]'::jsonb)
              INTO v_blocked
              FROM (SELECT DISTINCT l.pid
                      FROM (SELECT a.xmax FROM public.queue_stale_alert a WHERE a.executor_id = ANY (v_rest)
                            UNION ALL
                            SELECT s.xmax FROM public.queue_stale_check_serial s) held
                      JOIN pg_catalog.pg_locks l ON l.locktype = 'transactionid' AND l.transactionid = held.xmax
                                                AND l.granted AND l.pid <> pg_catalog.pg_backend_pid()) k;
            v_free := false;
            OPEN c FOR
                SELECT h.executor_id, h.executor_kind, h.last_beat_at, h.expected_cadence_seconds,
                       h.stale_threshold_seconds, a.silent_since, a.alerted_at, a.alerted_severity,
                       a.alerted_beat_at, a.last_warning_at, a.last_critical_at
                  FROM public.queue_stale_alert a
                  JOIN public.queue_heartbeat h ON h.executor_id = a.executor_id
                 WHERE a.executor_id = ANY (v_rest)
                   AND h.paused_at IS NULL
                   AND (a.alerted_at IS NOT NULL
                        OR iu_core.fn_queue_heartbeat_is_stale(h.last_beat_at, h.stale_threshold_seconds, v_floor, v_now))
                 ORDER BY a.executor_id;
        END IF;
        LOOP
            FETCH c INTO r;
            EXIT WHEN NOT FOUND;
            v_done := v_done || r.executor_id;
            IF v_free THEN
                v_locked := v_locked + 1;
            END IF;
            -- Alerts sent while another session held the row: folded into what this check
            -- knows (and, when it holds the row, into the row, once).
            SELECT max(ca.alerted_at) FILTER (WHERE ca.severity = 'warning') AS warning_at,
                   max(ca.alerted_at) FILTER (WHERE ca.severity = 'critical') AS critical_at,
                   (array_agg(ca.alerted_at ORDER BY ca.alerted_at DESC))[1] AS alerted_at,
                   (array_agg(ca.severity ORDER BY ca.alerted_at DESC))[1] AS severity,
                   (array_agg(ca.silent_since ORDER BY ca.alerted_at DESC))[1] AS silent_since,
                   (array_agg(ca.alerted_beat_at ORDER BY ca.alerted_at DESC))[1] AS alerted_beat_at
              INTO x
              FROM public.queue_stale_alert_contended ca WHERE ca.executor_id = r.executor_id;
            IF x.alerted_at IS NOT NULL THEN
                r.last_warning_at  := greatest(r.last_warning_at, x.warning_at);
                r.last_critical_at := greatest(r.last_critical_at, x.critical_at);
                IF r.alerted_at IS NULL OR x.alerted_at > r.alerted_at THEN
                    r.alerted_at := x.alerted_at;
                    r.alerted_severity := x.severity;
                    r.silent_since := x.silent_since;
                    r.alerted_beat_at := x.alerted_beat_at;
                END IF;
                IF v_free THEN
                    UPDATE public.queue_stale_alert
                       SET silent_since = r.silent_since, alerted_at = r.alerted_at, alerted_severity = r.alerted_severity,
                           alerted_beat_at = r.alerted_beat_at, last_warning_at = r.last_warning_at,
                           last_critical_at = r.last_critical_at
                     WHERE executor_id = r.executor_id;
                    DELETE FROM public.queue_stale_alert_contended ca WHERE ca.executor_id = r.executor_id;
                END IF;
            END IF;
            -- A beat stamped ahead of the clock (fn_queue_heartbeat_is_ahead: the server's
            -- clock stepped back since it was written) says nothing about when the executor
            -- last beat. The stamp is reset to the clock, as if the executor beat when the
            -- check noticed it: a live executor beats again within its cadence and raises
            -- nothing (every executor's stamp is ahead after such a step, so alerting them
            -- all at once would be an alert storm), a dead one is silent one threshold later
            -- and is alerted then, with its age counted from here. Only rows nobody holds
            -- are reset (SKIP LOCKED: never a wait); one whose row a session holds is judged
            -- as it stands, and an ahead stamp is stale (fn_queue_heartbeat_is_stale), so it
            -- is alerted. An open alert about that very stamp moves to the reset stamp.
            IF iu_core.fn_queue_heartbeat_is_ahead(r.last_beat_at, v_now) THEN
                UPDATE public.queue_heartbeat h SET last_beat_at = v_now
                 WHERE h.executor_id IN (SELECT hb.executor_id FROM public.queue_heartbeat hb
                                          WHERE hb.executor_id = r.executor_id AND hb.last_beat_at = r.last_beat_at
                                            FOR UPDATE SKIP LOCKED);
                IF FOUND THEN
                    IF v_free AND r.alerted_beat_at = r.last_beat_at THEN
                        UPDATE public.queue_stale_alert SET alerted_beat_at = v_now WHERE executor_id = r.executor_id;
                    END IF;
                    v_reset := v_reset + 1;
                    CONTINUE;
                END IF;
            END IF;
            v_threshold := greatest(r.stale_threshold_seconds, v_floor);
            v_age       := floor(extract(epoch FROM (v_now - r.last_beat_at)))::bigint;
            -- A beat since the alert is a later stamp than the one alerted; or, when the
            -- alerted stamp was ahead of the alert's own clock (fn_queue_heartbeat_is_ahead:
            -- the server's clock stepped back since), any other stamp, since a live
            -- executor's next beat is then stamped earlier than the one that was ahead.
            v_beaten    := r.alerted_beat_at IS NOT NULL
                           AND (r.last_beat_at > r.alerted_beat_at
                                OR (r.alerted_beat_at > r.alerted_at AND r.last_beat_at <> r.alerted_beat_at));

            IF iu_core.fn_queue_heartbeat_is_stale(r.last_beat_at, r.stale_threshold_seconds, v_floor, v_now) THEN
                v_stale  := v_stale + 1;
                v_window := make_interval(secs => 2 * v_threshold::bigint);  -- bigint: 2 x 2147483647 fits

                -- It beat since its open alert and is silent again: that alert's silence ended
                -- (report it, once) and this is a NEW silence with its own silent_since.
                v_open := r.alerted_at IS NOT NULL;
                IF v_free AND v_open AND v_beaten THEN
                    v_event := iu_core.fn_queue_alert_emit('queue_worker_recovered', 'info', r.executor_id,
                        jsonb_build_object(
                            'executor_id',              r.executor_id,
                            'executor_kind',            r.executor_kind,
                            'reason',                   'beat',
                            'silent_since',             r.silent_since,
                            'recovered_at',             r.last_beat_at,
                            'silent_seconds',           greatest(0, floor(extract(epoch FROM (
                                                            r.last_beat_at - coalesce(r.silent_since, r.alerted_beat_at)))))::bigint,
                            'last_alerted_at',          r.alerted_at,
                            'last_alerted_severity',    r.alerted_severity,
                            'expected_cadence_seconds', r.expected_cadence_seconds,
                            'silent_again',             true));
                    UPDATE public.queue_stale_alert
                       SET silent_since = NULL, alerted_at = NULL, alerted_severity = NULL, alerted_beat_at = NULL
                     WHERE executor_id = r.executor_id;
                    v_recovered := v_recovered + 1;
                    v_alerts    := v_alerts || jsonb_build_object('executor_id', r.executor_id, 'severity', 'info',
                                                                  'event_id', v_event, 'recovered', true);
                    v_open := false;
                END IF;

                -- The shared assessment (fn_queue_heartbeat_gap_ratio, _severity): severity
                -- decided on the very gap_ratio the payload reports.
                v_ratio    := iu_core.fn_queue_heartbeat_gap_ratio(r.last_beat_at, r.expected_cadence_seconds, v_now);
                v_severity := iu_core.fn_queue_heartbeat_severity(v_ratio);
                -- When it crossed its threshold; for a beat stamped ahead of the clock
                -- (fn_queue_heartbeat_is_ahead) that moment is unknown: now, when it is noticed.
                v_since    := least(r.last_beat_at + make_interval(secs => v_threshold), v_now);

                -- The window rule: no silent alert for this executor in the last 2 x threshold,
                -- whatever happened since (resume, recovery, re-register). The most severe alert
                -- inside the window decides; an escalation (warning -> critical) still goes out.
                v_window_sev := CASE WHEN r.last_critical_at > v_now - v_window THEN 'critical'
                                     WHEN r.last_warning_at  > v_now - v_window THEN 'warning' END;

                v_kind := CASE WHEN v_severity = 'critical'
                                    AND ((v_open AND r.alerted_severity = 'warning') OR v_window_sev = 'warning')
                               THEN 'escalation'
                               WHEN v_window_sev IS NOT NULL THEN NULL          -- inside the window: suppressed
                               WHEN v_open THEN 'repeat'
                               ELSE 'first' END;

                IF v_kind IS NOT NULL THEN
                    v_event := iu_core.fn_queue_alert_emit('queue_worker_silent', v_severity, r.executor_id,
                        jsonb_build_object(
                            'executor_id',              r.executor_id,
                            'executor_kind',            r.executor_kind,
                            'age_seconds',              v_age,
                            'expected_cadence_seconds', r.expected_cadence_seconds,
                            'stale_threshold_seconds',  v_threshold,
                            'gap_ratio',                v_ratio,
                            'silent_since',             v_since,
                            'last_beat_at',             r.last_beat_at,
                            'alert',                    v_kind)
                        || CASE WHEN v_free THEN '{}'::jsonb
                                ELSE jsonb_build_object('contended', true, 'blocked_by', v_blocked) END);
                    IF v_kind = 'escalation' THEN
                        v_escalated := v_escalated + 1;
                    END IF;
                    IF v_free THEN
                        UPDATE public.queue_stale_alert
                           SET silent_since = v_since, alerted_at = v_now, alerted_severity = v_severity,
                               alerted_beat_at = r.last_beat_at,
                               last_warning_at  = CASE WHEN v_severity = 'warning'  THEN v_now ELSE last_warning_at END,
                               last_critical_at = CASE WHEN v_severity = 'critical' THEN v_now ELSE last_critical_at END
                         WHERE executor_id = r.executor_id;
                    ELSE
                        INSERT INTO public.queue_stale_alert_contended (executor_id, alerted_at, severity, silent_since,
                                                                        alerted_beat_at, held_by)
                        VALUES (r.executor_id, v_now, v_severity, v_since, r.last_beat_at, v_blocked);
                        v_contended := v_contended + 1;
                    END IF;
                    v_emitted := v_emitted + 1;
                    v_alerts  := v_alerts || (jsonb_build_object('executor_id', r.executor_id, 'severity', v_severity,
                                                                 'event_id', v_event, 'alert', v_kind)
                                              || CASE WHEN v_free THEN '{}'::jsonb ELSE '{"contended": true}'::jsonb END);
                ELSE
                    v_suppressed := v_suppressed + 1;
                END IF;
            ELSIF v_free AND r.alerted_at IS NOT NULL
                  AND (r.alerted_beat_at IS NULL OR v_beaten
                       OR (r.alerted_at <= v_now AND r.alerted_beat_at <= r.alerted_at)) THEN
                -- No longer stale: report the silence as ended, once. reason 'beat' when it beat
                -- since the alert; otherwise its threshold (or the floor) was raised past its age,
                -- judged only at a moment not earlier than the alert (see the header: a
                -- judgement older than the alert is no evidence that the silence ended), and
                -- only for an alert about a beat in its past: a beat stamped ahead of the
                -- clock (fn_queue_heartbeat_is_ahead) starts to look fresh once the clock
                -- catches up with it, though nothing beat; only a new beat ends that silence.
                v_event := iu_core.fn_queue_alert_emit('queue_worker_recovered', 'info', r.executor_id,
                    jsonb_build_object(
                        'executor_id',              r.executor_id,
                        'executor_kind',            r.executor_kind,
                        'reason',                   CASE WHEN r.alerted_beat_at IS NULL OR v_beaten
                                                         THEN 'beat' ELSE 'threshold_raised' END,
                        'silent_since',             r.silent_since,
                        'recovered_at',             CASE WHEN r.alerted_beat_at IS NULL OR v_beaten
                                                         THEN r.last_beat_at ELSE v_now END,
                        'silent_seconds',           greatest(0, floor(extract(epoch FROM (
                                                        CASE WHEN r.alerted_beat_at IS NULL OR v_beaten
                                                             THEN r.last_beat_at ELSE v_now END
                                                        - coalesce(r.silent_since, r.last_beat_at)))))::bigint,
                        'last_alerted_at',          r.alerted_at,
                        'last_alerted_severity',    r.alerted_severity,
                        'expected_cadence_seconds', r.expected_cadence_seconds));
                UPDATE public.queue_stale_alert
                   SET silent_since = NULL, alerted_at = NULL, alerted_severity = NULL, alerted_beat_at = NULL
                 WHERE executor_id = r.executor_id;
                v_recovered := v_recovered + 1;
                v_alerts    := v_alerts || jsonb_build_object('executor_id', r.executor_id, 'severity', 'info',
                                                              'event_id', v_event, 'recovered', true);
            END IF;
        END LOOP;
        CLOSE c;
      END LOOP;
    END IF;

    RETURN jsonb_build_object(
        'checked',        v_checked,
        'stale',          v_stale,
        'emitted',        v_emitted,
        'escalated',      v_escalated,
        'suppressed',     v_suppressed,
        'recovered',      v_recovered,
        'ahead_reset',    v_reset,
        'paused',         v_paused,
        'skipped_locked', greatest(v_candidates - v_locked - v_contended, 0),
        'contended',      v_contended,
        'blocked_by',     v_blocked,
        'floor_seconds',  v_floor,
        'checked_at',     v_now,
        'alerts',         v_alerts);
END;
$$;
