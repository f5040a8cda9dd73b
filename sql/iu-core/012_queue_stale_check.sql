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
--                        was emitted in the last 2 x effective threshold — read from the
--                        check's own memory (queue_stale_alert.last_warning_at /
--                        last_critical_at, 010), which a resume, a recovery or a
--                        re-registration does not reset, so none of them makes an alert
--                        repeat inside the window. Never read back from event_outbox: a row
--                        there could be forged by a producer (those two types are refused to
--                        everyone but the package now, and the check would ignore them anyway). An
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
-- The open alert and the window memory live in queue_stale_alert (one row per executor,
-- written only by the package), updated in the same transaction as the event. The events
-- are written by fn_queue_alert_emit, an internal helper granted to no one:
-- fn_iu_emit_event refuses these two types to every caller.

-- Concurrency: the check locks the executor's queue_stale_alert row (FOR UPDATE SKIP
-- LOCKED, in executor order) and never the heartbeat row: it reads the last COMMITTED beat
-- with a plain read, which no lock blocks. So an executor that beats inside a transaction
-- and stays idle with its heartbeat row locked is judged on its committed beat and alerted
-- within one call, without waiting. Two checks at once never emit twice for one executor:
-- the alert row another check holds is left to it (counted in skipped_locked) and the
-- decision is taken on the locked (latest) alert-row version. Under REPEATABLE READ a
-- concurrent update raises a serialization failure instead of a duplicate.
--
-- Cost: the fresh path is one set-based scan of queue_heartbeat joined to its alert row by
-- primary key, with no per-row function calls; only stale or alerted rows are visited one
-- by one.

-- +goose Up

-- +goose StatementBegin
CREATE FUNCTION fn_queue_alert_emit(p_event_type text, p_severity text, p_executor_id text, p_payload jsonb)
RETURNS uuid
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
    -- Internal (granted to no one; runs as the package owner inside fn_queue_stale_check):
    -- writes one system alert row. The envelope is fixed: domain system, stream alert, lane
    -- immediate, subject queue_heartbeat / the executor id. The payload is the package's
    -- own and still passes the table's hygiene CHECK.
DECLARE
    v_id uuid;
BEGIN
    INSERT INTO event_outbox (event_domain, event_type, event_stream, delivery_lane, event_severity,
                              event_subject_table, event_subject_ref, safe_payload)
    VALUES ('system', p_event_type, 'alert', 'immediate', p_severity, 'queue_heartbeat', p_executor_id, p_payload)
    RETURNING id INTO v_id;
    RETURN v_id;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_queue_stale_check()
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_floor      integer;
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
    PERFORM fn_iu_require_trusted_search_path('fn_queue_stale_check');
    v_floor := fn_queue_heartbeat_floor_seconds();

    -- The fresh path: one aggregate, no per-row calls. Plain reads: the committed beats.
    SELECT count(*) FILTER (WHERE h.paused_at IS NULL),
           count(*) FILTER (WHERE h.paused_at IS NOT NULL),
           count(*) FILTER (WHERE h.paused_at IS NULL
                              AND (a.alerted_at IS NOT NULL
                                   OR fn_queue_heartbeat_is_stale(h.last_beat_at, h.stale_threshold_seconds, v_floor, v_now)))
      INTO v_checked, v_paused, v_candidates
      FROM queue_heartbeat h
      LEFT JOIN queue_stale_alert a ON a.executor_id = h.executor_id;

    IF v_candidates > 0 THEN
        FOR r IN
            SELECT h.executor_id, h.executor_kind, h.last_beat_at, h.expected_cadence_seconds,
                   h.stale_threshold_seconds, a.silent_since, a.alerted_at, a.alerted_severity,
                   a.alerted_beat_at, a.last_warning_at, a.last_critical_at
              FROM queue_stale_alert a
              JOIN queue_heartbeat h ON h.executor_id = a.executor_id
             WHERE h.paused_at IS NULL
               AND (a.alerted_at IS NOT NULL
                    OR fn_queue_heartbeat_is_stale(h.last_beat_at, h.stale_threshold_seconds, v_floor, v_now))
             ORDER BY a.executor_id
               FOR UPDATE OF a SKIP LOCKED
        LOOP
            v_locked    := v_locked + 1;
            v_threshold := greatest(r.stale_threshold_seconds, v_floor);
            v_age       := floor(extract(epoch FROM (v_now - r.last_beat_at)))::bigint;

            IF fn_queue_heartbeat_is_stale(r.last_beat_at, r.stale_threshold_seconds, v_floor, v_now) THEN
                v_stale  := v_stale + 1;
                v_window := make_interval(secs => 2 * v_threshold::bigint);  -- bigint: 2 x 2147483647 fits

                -- It beat since its open alert and is silent again: that alert's silence ended
                -- (report it, once) and this is a NEW silence with its own silent_since.
                v_open := r.alerted_at IS NOT NULL;
                IF v_open AND r.alerted_beat_at IS NOT NULL AND r.last_beat_at > r.alerted_beat_at THEN
                    v_event := fn_queue_alert_emit('queue_worker_recovered', 'info', r.executor_id,
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
                    UPDATE queue_stale_alert
                       SET silent_since = NULL, alerted_at = NULL, alerted_severity = NULL, alerted_beat_at = NULL
                     WHERE executor_id = r.executor_id;
                    v_recovered := v_recovered + 1;
                    v_alerts    := v_alerts || jsonb_build_object('executor_id', r.executor_id, 'severity', 'info',
                                                                  'event_id', v_event, 'recovered', true);
                    v_open := false;
                END IF;

                -- The assessment of 010: severity decided on the very gap_ratio the payload reports.
                v_ratio    := fn_queue_heartbeat_gap_ratio(r.last_beat_at, r.expected_cadence_seconds, v_now);
                v_severity := fn_queue_heartbeat_severity(v_ratio);
                v_since    := r.last_beat_at + make_interval(secs => v_threshold);

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
                    v_event := fn_queue_alert_emit('queue_worker_silent', v_severity, r.executor_id,
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
                    UPDATE queue_stale_alert
                       SET silent_since = v_since, alerted_at = v_now, alerted_severity = v_severity,
                           alerted_beat_at = r.last_beat_at,
                           last_warning_at  = CASE WHEN v_severity = 'warning'  THEN v_now ELSE last_warning_at END,
                           last_critical_at = CASE WHEN v_severity = 'critical' THEN v_now ELSE last_critical_at END
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
                v_event := fn_queue_alert_emit('queue_worker_recovered', 'info', r.executor_id,
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
                UPDATE queue_stale_alert
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

REVOKE ALL ON FUNCTION fn_queue_alert_emit(text, text, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_stale_check() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fn_queue_stale_check() TO dot_executor;

-- +goose Down
DROP FUNCTION fn_queue_stale_check();
DROP FUNCTION fn_queue_alert_emit(text, text, text, jsonb);
