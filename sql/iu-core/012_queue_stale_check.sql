-- 012_queue_stale_check.sql
--
-- Adds fn_queue_stale_check(), which turns executor silence into alert events
-- (dot_executor; the runner calls it on a cadence under half the smallest threshold).
--
-- Why: a worker that stops is otherwise invisible (seed DP4: a 95-hour silent gap).
--
-- Rules:
--   effective threshold  greatest(stale_threshold_seconds, floor); the floor is dot_config
--                        queue.heartbeat.stale_threshold_seconds, parsed only by
--                        fn_queue_heartbeat_floor_seconds (010): any non-negative integer,
--                        clamped to 2147483647; missing or non-integer means no floor.
--                        2 x threshold is computed in bigint.
--   stale                now() - last_beat_at > effective threshold (paused executors never are)
--   gap_ratio            age_seconds / expected_cadence_seconds truncated to 2 decimals; the
--                        severity is decided on that same reported value: warning below 10,
--                        critical from 10 (so a payload never shows 10.00 with warning)
--   silent alert         emitted unless a system/queue_worker_silent event for the executor
--                        (event_subject_ref) was emitted in the last 2 x effective threshold —
--                        read from event_outbox itself, so a resume, a recovery or a
--                        re-registration cannot make an alert repeat inside the window. An
--                        escalation (critical while the window holds only warnings) is emitted
--                        inside the window. payload alert = first | repeat | escalation.
--   recovery             an alerted executor that beats again gets one system/queue_worker_recovered
--                        (severity info, reason 'beat') at the next check, and its bookkeeping is
--                        cleared; one that is no longer stale only because its threshold or the
--                        floor was raised gets the same event with reason 'threshold_raised'.
--                        One that beat after its alert and is already silent again at the next
--                        check gets the recovered event too (silent_again: true), and the new
--                        silence is a new incident: new silent_since, alert 'first' (subject to
--                        the window rule above, like any non-escalation alert).
-- The open alert is kept on the heartbeat row (silent_since, alerted_at, alerted_severity,
-- alerted_beat_at), written in the same transaction as the event; the window is the outbox.

-- Concurrency: the rows to act on are locked FOR UPDATE SKIP LOCKED in executor order and
-- the decision is taken on the locked (latest) row version, so two checks at once never emit
-- twice for one executor: a row another check (or a beat) holds is left to it and counted in
-- skipped_locked. Under REPEATABLE READ a concurrent update raises a serialization failure
-- instead of a duplicate.
--
-- Cost: the fresh path is two set-based scans of queue_heartbeat with no per-row function
-- calls; only stale or alerted rows are visited one by one, each with one index probe of
-- event_outbox for the window (event_outbox_alert_subject_idx).

-- +goose Up

-- +goose StatementBegin
CREATE FUNCTION fn_queue_stale_check()
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_floor      integer := fn_queue_heartbeat_floor_seconds();
    v_now        timestamptz := now();
    v_checked    bigint;
    v_paused     bigint;
    v_candidates bigint;
    v_locked     bigint := 0;
    v_stale      bigint := 0;
    v_emitted    bigint := 0;
    v_suppressed bigint := 0;
    v_escalated  bigint := 0;
    v_recovered  bigint := 0;
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
    v_kind       text;
BEGIN
    -- The fresh path: one aggregate, no per-row calls.
    SELECT count(*) FILTER (WHERE h.paused_at IS NULL),
           count(*) FILTER (WHERE h.paused_at IS NOT NULL),
           count(*) FILTER (WHERE h.paused_at IS NULL
                              AND (h.alerted_at IS NOT NULL
                                   OR h.last_beat_at < v_now - make_interval(secs => greatest(h.stale_threshold_seconds, v_floor))))
      INTO v_checked, v_paused, v_candidates
      FROM queue_heartbeat h;

    IF v_candidates > 0 THEN
        FOR r IN
            SELECT h.*
              FROM queue_heartbeat h
             WHERE h.paused_at IS NULL
               AND (h.alerted_at IS NOT NULL
                    OR h.last_beat_at < v_now - make_interval(secs => greatest(h.stale_threshold_seconds, v_floor)))
             ORDER BY h.executor_id
               FOR UPDATE SKIP LOCKED
        LOOP
            v_locked    := v_locked + 1;
            v_threshold := greatest(r.stale_threshold_seconds, v_floor);
            v_age       := floor(extract(epoch FROM (v_now - r.last_beat_at)))::bigint;

            IF v_now - r.last_beat_at > make_interval(secs => v_threshold) THEN
                v_stale  := v_stale + 1;
                v_window := make_interval(secs => 2 * v_threshold::bigint);  -- bigint: 2 x 2147483647 fits

                -- It beat since its open alert and is silent again: that alert's silence ended
                -- (report it, once) and this is a NEW silence with its own silent_since.
                v_open := r.alerted_at IS NOT NULL;
                IF v_open AND r.alerted_beat_at IS NOT NULL AND r.last_beat_at > r.alerted_beat_at THEN
                    v_event := fn_iu_emit_event(
                        'system', 'queue_worker_recovered', 'alert', 'immediate', 'info',
                        'queue_heartbeat', r.executor_id,
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
                    UPDATE queue_heartbeat
                       SET silent_since = NULL, alerted_at = NULL, alerted_severity = NULL, alerted_beat_at = NULL
                     WHERE executor_id = r.executor_id;
                    v_recovered := v_recovered + 1;
                    v_alerts    := v_alerts || jsonb_build_object('executor_id', r.executor_id, 'severity', 'info',
                                                                  'event_id', v_event, 'recovered', true);
                    v_open := false;
                END IF;

                -- Severity is decided on the very gap_ratio the payload reports: truncated (not
                -- rounded) to 2 decimals, so 9.999 reads 9.99 / warning and critical means >= 10.
                v_ratio    := trunc(v_age::numeric / r.expected_cadence_seconds, 2);
                v_severity := CASE WHEN v_ratio < 10 THEN 'warning' ELSE 'critical' END;
                v_since    := r.last_beat_at + make_interval(secs => v_threshold);

                -- The literal window rule (spec 5): no system/queue_worker_silent for this executor
                -- in the last 2 x threshold, whatever happened since (resume, recovery, re-register).
                -- Shaped for the partial index event_outbox_alert_subject_idx
                -- (event_subject_ref, created_at) WHERE event_domain = 'system' AND event_type = 'queue_worker_silent'.
                -- The most severe such event decides; an escalation (warning -> critical) still goes out.
                SELECT o.event_severity INTO v_window_sev
                  FROM event_outbox o
                 WHERE o.event_domain = 'system'
                   AND o.event_type = 'queue_worker_silent'
                   AND o.event_subject_ref = r.executor_id
                   AND o.created_at > v_now - v_window
                 ORDER BY (o.event_severity = 'critical') DESC
                 LIMIT 1;
                IF NOT FOUND THEN
                    v_window_sev := NULL;
                END IF;

                v_kind := CASE WHEN v_severity = 'critical'
                                    AND ((v_open AND r.alerted_severity = 'warning') OR v_window_sev = 'warning')
                               THEN 'escalation'
                               WHEN v_window_sev IS NOT NULL THEN NULL          -- inside the window: suppressed
                               WHEN v_open THEN 'repeat'
                               ELSE 'first' END;

                IF v_kind IS NOT NULL THEN
                    v_event := fn_iu_emit_event(
                        'system', 'queue_worker_silent', 'alert', 'immediate', v_severity,
                        'queue_heartbeat', r.executor_id,
                        jsonb_build_object(
                            'executor_id',              r.executor_id,
                            'executor_kind',            r.executor_kind,
                            'age_seconds',              v_age,
                            'expected_cadence_seconds', r.expected_cadence_seconds,
                            'stale_threshold_seconds',  v_threshold,
                            'gap_ratio',                v_ratio,
                            'silent_since',             v_since,
                            'last_beat_at',             r.last_beat_at,
                            'alert',                    v_kind));
                    IF v_kind = 'escalation' THEN
                        v_escalated := v_escalated + 1;
                    END IF;
                    UPDATE queue_heartbeat
                       SET silent_since = v_since, alerted_at = v_now, alerted_severity = v_severity,
                           alerted_beat_at = r.last_beat_at
                     WHERE executor_id = r.executor_id;
                    v_emitted := v_emitted + 1;
                    v_alerts  := v_alerts || jsonb_build_object('executor_id', r.executor_id, 'severity', v_severity,
                                                                'event_id', v_event, 'alert', v_kind);
                ELSE
                    v_suppressed := v_suppressed + 1;
                END IF;
            ELSIF r.alerted_at IS NOT NULL THEN
                -- No longer stale: report the silence as ended, once. reason 'beat' when it beat
                -- since the alert; otherwise its threshold (or the floor) was raised past its age.
                v_event := fn_iu_emit_event(
                    'system', 'queue_worker_recovered', 'alert', 'immediate', 'info',
                    'queue_heartbeat', r.executor_id,
                    jsonb_build_object(
                        'executor_id',              r.executor_id,
                        'executor_kind',            r.executor_kind,
                        'reason',                   CASE WHEN r.alerted_beat_at IS NULL OR r.last_beat_at > r.alerted_beat_at
                                                         THEN 'beat' ELSE 'threshold_raised' END,
                        'silent_since',             r.silent_since,
                        'recovered_at',             CASE WHEN r.alerted_beat_at IS NULL OR r.last_beat_at > r.alerted_beat_at
                                                         THEN r.last_beat_at ELSE v_now END,
                        'silent_seconds',           greatest(0, floor(extract(epoch FROM (
                                                        CASE WHEN r.alerted_beat_at IS NULL OR r.last_beat_at > r.alerted_beat_at
                                                             THEN r.last_beat_at ELSE v_now END
                                                        - coalesce(r.silent_since, r.last_beat_at)))))::bigint,
                        'last_alerted_at',          r.alerted_at,
                        'last_alerted_severity',    r.alerted_severity,
                        'expected_cadence_seconds', r.expected_cadence_seconds));
                UPDATE queue_heartbeat
                   SET silent_since = NULL, alerted_at = NULL, alerted_severity = NULL, alerted_beat_at = NULL
                 WHERE executor_id = r.executor_id;
                v_recovered := v_recovered + 1;
                v_alerts    := v_alerts || jsonb_build_object('executor_id', r.executor_id, 'severity', 'info',
                                                              'event_id', v_event, 'recovered', true);
            END IF;
        END LOOP;
    END IF;

    RETURN jsonb_build_object(
        'checked',        v_checked,
        'stale',          v_stale,
        'emitted',        v_emitted,
        'escalated',      v_escalated,
        'suppressed',     v_suppressed,
        'recovered',      v_recovered,
        'paused',         v_paused,
        'skipped_locked', greatest(v_candidates - v_locked, 0),
        'floor_seconds',  v_floor,
        'checked_at',     v_now,
        'alerts',         v_alerts);
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION fn_queue_stale_check() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fn_queue_stale_check() TO dot_executor;

-- +goose Down
DROP FUNCTION fn_queue_stale_check();
