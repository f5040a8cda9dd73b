-- 012_queue_stale_check.sql
--
-- Adds fn_queue_stale_check(), which turns executor silence into alert events
-- (dot_executor; the runner calls it on a cadence under half the smallest threshold).
--
-- Why: a worker that stops is otherwise invisible (seed DP4: a 95-hour silent gap).
--
-- Rules:
--   effective threshold  greatest(stale_threshold_seconds, floor); the floor is dot_config
--                        queue.heartbeat.stale_threshold_seconds, and a missing or non-integer
--                        value means no floor (fn_queue_heartbeat_floor_seconds, 010)
--   stale                now() - last_beat_at > effective threshold (paused executors never are)
--   gap_ratio            age_seconds / expected_cadence_seconds; severity warning below 10,
--                        critical from 10
--   silent alert         one system/queue_worker_silent per executor per 2 x effective threshold
--                        window; an escalation warning -> critical is emitted inside the window
--   recovery             an alerted executor that beats again gets one system/queue_worker_recovered
--                        (severity info, reason 'beat') at the next check, and its bookkeeping is
--                        cleared; one that is no longer stale only because its threshold or the
--                        floor was raised gets the same event with reason 'threshold_raised'
-- The window is kept on the heartbeat row (silent_since, alerted_at, alerted_severity,
-- alerted_beat_at), written
-- in the same transaction as the event.
--
-- Concurrency: the rows to act on are locked FOR UPDATE SKIP LOCKED in executor order and
-- the decision is taken on the locked (latest) row version, so two checks at once never emit
-- twice for one executor: a row another check (or a beat) holds is left to it and counted in
-- skipped_locked. Under REPEATABLE READ a concurrent update raises a serialization failure
-- instead of a duplicate.
--
-- Cost: the fresh path is two set-based scans of queue_heartbeat with no per-row function
-- calls; only stale or alerted rows are visited one by one.

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
                v_stale    := v_stale + 1;
                v_ratio    := round(v_age::numeric / r.expected_cadence_seconds, 2);
                v_severity := CASE WHEN v_age::numeric / r.expected_cadence_seconds < 10 THEN 'warning' ELSE 'critical' END;
                v_since    := r.last_beat_at + make_interval(secs => v_threshold);

                IF r.alerted_at IS NULL
                   OR r.alerted_at <= v_now - make_interval(secs => 2 * v_threshold)
                   OR (r.alerted_severity = 'warning' AND v_severity = 'critical') THEN
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
                            'alert',                    CASE WHEN r.alerted_at IS NULL THEN 'first'
                                                             WHEN r.alerted_severity = 'warning' AND v_severity = 'critical' THEN 'escalation'
                                                             ELSE 'repeat' END));
                    IF r.alerted_severity = 'warning' AND v_severity = 'critical' THEN
                        v_escalated := v_escalated + 1;
                    END IF;
                    UPDATE queue_heartbeat
                       SET silent_since = v_since, alerted_at = v_now, alerted_severity = v_severity,
                           alerted_beat_at = r.last_beat_at
                     WHERE executor_id = r.executor_id;
                    v_emitted := v_emitted + 1;
                    v_alerts  := v_alerts || jsonb_build_object('executor_id', r.executor_id, 'severity', v_severity,
                                                                'event_id', v_event);
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
