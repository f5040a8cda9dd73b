CREATE OR REPLACE FUNCTION public.fn_queue_stale_check()
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
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
    v_floor := iu_core.fn_queue_heartbeat_floor_seconds();

    -- The fresh path: one aggregate, no per-row calls. Plain reads: the committed beats.
    SELECT count(*) FILTER (WHERE h.paused_at IS NULL),
           count(*) FILTER (WHERE h.paused_at IS NOT NULL),
           count(*) FILTER (WHERE h.paused_at IS NULL
                              AND (a.alerted_at IS NOT NULL
                                   OR iu_core.fn_queue_heartbeat_is_stale(h.last_beat_at, h.stale_threshold_seconds, v_floor, v_now)))
      INTO v_checked, v_paused, v_candidates
      FROM public.queue_heartbeat h
      LEFT JOIN public.queue_stale_alert a ON a.executor_id = h.executor_id;

    IF v_candidates > 0 THEN
        FOR r IN
            SELECT h.executor_id, h.executor_kind, h.last_beat_at, h.expected_cadence_seconds,
                   h.stale_threshold_seconds, a.silent_since, a.alerted_at, a.alerted_severity,
                   a.alerted_beat_at, a.last_warning_at, a.last_critical_at
              FROM public.queue_stale_alert a
              JOIN public.queue_heartbeat h ON h.executor_id = a.executor_id
             WHERE h.paused_at IS NULL
               AND (a.alerted_at IS NOT NULL
                    OR iu_core.fn_queue_heartbeat_is_stale(h.last_beat_at, h.stale_threshold_seconds, v_floor, v_now))
             ORDER BY a.executor_id
               FOR UPDATE OF a SKIP LOCKED
        LOOP
            v_locked    := v_locked + 1;
            v_threshold := greatest(r.stale_threshold_seconds, v_floor);
            v_age       := floor(extract(epoch FROM (v_now - r.last_beat_at)))::bigint;

            IF iu_core.fn_queue_heartbeat_is_stale(r.last_beat_at, r.stale_threshold_seconds, v_floor, v_now) THEN
                v_stale  := v_stale + 1;
                v_window := make_interval(secs => 2 * v_threshold::bigint);  -- bigint: 2 x 2147483647 fits

                -- It beat since its open alert and is silent again: that alert's silence ended
                -- (report it, once) and this is a NEW silence with its own silent_since.
                v_open := r.alerted_at IS NOT NULL;
                IF v_open AND r.alerted_beat_at IS NOT NULL AND r.last_beat_at > r.alerted_beat_at THEN
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
                            'alert',                    v_kind));
                    IF v_kind = 'escalation' THEN
                        v_escalated := v_escalated + 1;
                    END IF;
                    UPDATE public.queue_stale_alert
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
                v_event := iu_core.fn_queue_alert_emit('queue_worker_recovered', 'info', r.executor_id,
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
                UPDATE public.queue_stale_alert
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
