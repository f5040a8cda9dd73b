package queuehealth

import (
	"strings"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// heartbeatView reads the heartbeat row of exec from v_queue_health as workflow_admin
// would (conn), returning status_hint, severity and gap_ratio.
func heartbeatView(t testing.TB, q querier, exec string) (hint string, severity *string, ratio float64) {
	t.Helper()
	if err := q.QueryRow(ctx(t), `SELECT status_hint, severity, gap_ratio::float8 FROM v_queue_health
	                                WHERE source = 'heartbeat' AND subject = $1`, exec).Scan(&hint, &severity, &ratio); err != nil {
		t.Fatalf("v_queue_health row of %s: %v", exec, err)
	}
	return hint, severity, ratio
}

// Rule: "set it huge and the stale-check is inert" — for ANY number of
// digits. A floor of 2147483647 or 99999999999 (more than nine digits, whitespace around
// it) is a huge floor, clamped to the largest integer, never "no floor": the stale-check
// emits nothing and v_queue_health (read by workflow_admin, through the same single
// parser) shows the executor fresh.
func TestStaleCheck_HugeFloorOfAnyLengthIsInert(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	register(t, db, "exec_h", 10, 30)
	silence(t, db, "exec_h", 100000)
	admin := asRole(t, db, "workflow_admin")
	for _, floor := range []string{"2147483647", "99999999999", " 99999999999\n", "000000000000000000000000000099999999999"} {
		setConfig(t, db, "queue.heartbeat.stale_threshold_seconds", floor)
		out := staleCheck(t, db.Pool)
		if num(t, out, "stale") != 0 || num(t, out, "emitted") != 0 || num(t, out, "floor_seconds") != 2147483647 {
			t.Fatalf("floor %q must make the stale-check inert (floor clamped to 2147483647): %v", floor, out)
		}
		if hint, sev, _ := heartbeatView(t, admin, "exec_h"); hint != "fresh" || sev != nil {
			t.Fatalf("floor %q: v_queue_health shows %s / %v, want fresh", floor, hint, sev)
		}
	}
	if n := len(alerts(t, db, "exec_h")); n != 0 {
		t.Fatalf("alerts under a huge floor: %d", n)
	}
	// 2 x threshold is computed in bigint: a threshold of 2147483647 (clamped floor, or an
	// executor's own) silent for longer still alerts once and then suppresses, no overflow.
	register(t, db, "exec_max", 10, 2147483647)
	silence(t, db, "exec_max", 2147483700)
	for i, want := range []float64{1, 0} {
		if out := staleCheck(t, db.Pool); num(t, out, "emitted") != want {
			t.Fatalf("check %d with a 2147483647 s threshold: %v", i+1, out)
		}
	}
	db.Exec(t, `DELETE FROM queue_heartbeat WHERE executor_id = 'exec_max'`)
	// Leading zeros and whitespace do not change an ordinary floor either.
	setConfig(t, db, "queue.heartbeat.stale_threshold_seconds", " 0600 ")
	if out := staleCheck(t, db.Pool); num(t, out, "floor_seconds") != 600 || num(t, out, "stale") != 1 {
		t.Fatalf("floor ' 0600 ': %v", out)
	}
}

// Rule (one parser): v_queue_health does not parse the floor itself; it calls
// fn_queue_heartbeat_floor_seconds, the helper the stale-check uses.
func TestHealthView_UsesTheOneFloorParser(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	var def string
	db.QueryRow(t, `SELECT pg_get_viewdef('v_queue_health'::regclass)`, nil, &def)
	if !strings.Contains(def, "iu_core.fn_queue_heartbeat_floor_seconds()") || strings.Contains(def, "queue.heartbeat.stale_threshold_seconds") {
		t.Fatalf("v_queue_health must call iu_core.fn_queue_heartbeat_floor_seconds() and not read the key itself:\n%s", def)
	}
}

// Rule: "When an executor that was alerted beats again, the next stale-check emits
// one system/queue_worker_recovered" — also when it has gone silent again by then. The old
// silence is reported as ended (reason beat, recovered_at = the beat), and the new silence
// is a new incident: its own silent_since (new beat + threshold) and a first alert.
func TestStaleCheck_BeatThenSilentAgainRecoversThenAlertsAnew(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	setConfig(t, db, "queue.heartbeat.stale_threshold_seconds", "0")
	register(t, db, "exec_b", 10, 30)
	silence(t, db, "exec_b", 2000)
	backdateAlert(t, db, "exec_b", 1000, "critical") // alerted 1000 s ago, outside the 60 s window
	// It beats (500 s ago) and goes silent again, all between two checks.
	db.Exec(t, `SELECT fn_queue_heartbeat_write('exec_b', '{}', 'w')`)
	silence(t, db, "exec_b", 500)

	out := staleCheck(t, db.Pool)
	if num(t, out, "recovered") != 1 || num(t, out, "emitted") != 1 || num(t, out, "stale") != 1 {
		t.Fatalf("check after beat + new silence: %v", out)
	}
	got := alerts(t, db, "exec_b")
	if len(got) != 3 {
		t.Fatalf("want backdated alert, recovered, new alert; got %+v", got)
	}
	rec, silent := got[1], got[2] // same created_at: find them by type
	if rec.Type != "queue_worker_recovered" {
		rec, silent = silent, rec
	}
	if rec.Type != "queue_worker_recovered" || rec.Severity != "info" || rec.Payload["reason"] != "beat" {
		t.Fatalf("recovered event: %+v", rec)
	}
	if silent.Type != "queue_worker_silent" || silent.Payload["alert"] != "first" {
		t.Fatalf("new silence must be a first alert: %+v", silent)
	}
	var ok bool
	db.QueryRow(t, `SELECT ($1::timestamptz) = h.last_beat_at AND ($2::timestamptz) = h.last_beat_at + interval '30 seconds'
	                       AND a.silent_since = ($2::timestamptz) AND a.alerted_beat_at = h.last_beat_at
	                  FROM queue_heartbeat h JOIN queue_stale_alert a USING (executor_id) WHERE executor_id = 'exec_b'`,
		[]any{rec.Payload["recovered_at"], silent.Payload["silent_since"]}, &ok)
	if !ok {
		t.Fatalf("recovered_at %v must be the new beat and silent_since %v the new beat + threshold",
			rec.Payload["recovered_at"], silent.Payload["silent_since"])
	}
	if out = staleCheck(t, db.Pool); num(t, out, "emitted") != 0 || num(t, out, "recovered") != 0 || num(t, out, "suppressed") != 1 {
		t.Fatalf("next check: %v", out)
	}

	// The same inside the window: the recovery is still reported at once, but the new
	// silence's alert waits for the window (see the window test).
	register(t, db, "exec_b2", 10, 30)
	silence(t, db, "exec_b2", 45)
	if out = staleCheck(t, db.Pool); num(t, out, "emitted") != 1 {
		t.Fatalf("exec_b2 first alert: %v", out)
	}
	db.Exec(t, `SELECT fn_queue_heartbeat_write('exec_b2', '{}', 'w')`)
	silence(t, db, "exec_b2", 40)
	if out = staleCheck(t, db.Pool); num(t, out, "recovered") != 1 || num(t, out, "emitted") != 0 {
		t.Fatalf("exec_b2 beat + silent again inside the window: %v", out)
	}
	got = alerts(t, db, "exec_b2")
	if len(got) != 2 || got[1].Type != "queue_worker_recovered" || got[1].Payload["silent_again"] != true {
		t.Fatalf("exec_b2 events: %+v", got)
	}
}

// Rule: "Unless a system/queue_worker_silent event for that executor was emitted in
// the last 2 x threshold seconds, emit one" — read from the check's own memory of the alerts
// it sent, so neither a resume nor a recovery (which close the open alert) lets an alert repeat
// inside the window; after the window it is emitted once; an escalation warning -> critical
// still goes out inside the window.
func TestStaleCheck_WindowSurvivesResumeAndRecovery(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	setConfig(t, db, "queue.heartbeat.stale_threshold_seconds", "0")

	// resume: alert, pause, resume (bookkeeping cleared), stale again within 60 s -> nothing.
	register(t, db, "exec_p", 10, 30)
	silence(t, db, "exec_p", 45)
	if out := staleCheck(t, db.Pool); num(t, out, "emitted") != 1 {
		t.Fatalf("first alert: %v", out)
	}
	db.Exec(t, `SELECT fn_queue_heartbeat_pause('exec_p', 'maintenance', 'ops')`)
	db.Exec(t, `SELECT fn_queue_heartbeat_resume('exec_p', 'ops')`)
	silence(t, db, "exec_p", 45)
	if out := staleCheck(t, db.Pool); num(t, out, "emitted") != 0 || num(t, out, "suppressed") != 1 {
		t.Fatalf("stale again after resume, inside the window: %v", out)
	}

	// recovery: alert, beat, recovered reported, stale again within 60 s -> no silent alert.
	register(t, db, "exec_q", 10, 30)
	silence(t, db, "exec_q", 45)
	staleCheck(t, db.Pool)
	db.Exec(t, `SELECT fn_queue_heartbeat_write('exec_q', '{}', 'w')`)
	if out := staleCheck(t, db.Pool); num(t, out, "recovered") != 1 {
		t.Fatalf("recovery: %v", out)
	}
	silence(t, db, "exec_q", 45)
	if out := staleCheck(t, db.Pool); num(t, out, "emitted") != 0 {
		t.Fatalf("stale again after recovery, inside the window: %v", out)
	}
	for _, exec := range []string{"exec_p", "exec_q"} {
		if n := count(t, db, `SELECT count(*) FROM event_outbox WHERE event_type = 'queue_worker_silent' AND event_subject_ref = $1`, exec); n != 1 {
			t.Fatalf("%s: %d silent alerts inside one window, want 1", exec, n)
		}
	}

	// After the window: the alert was 61 s ago (window 60 s), then a resume -> one alert.
	register(t, db, "exec_r61", 10, 30)
	register(t, db, "exec_r59", 10, 30)
	for _, c := range []struct {
		exec string
		ago  int
	}{{"exec_r61", 61}, {"exec_r59", 59}} {
		silence(t, db, c.exec, 45)
		backdateAlert(t, db, c.exec, c.ago, "warning")
		db.Exec(t, `SELECT fn_queue_heartbeat_pause($1, 'maintenance', 'ops')`, c.exec)
		db.Exec(t, `SELECT fn_queue_heartbeat_resume($1, 'ops')`, c.exec)
		silence(t, db, c.exec, 45)
	}
	staleCheck(t, db.Pool)
	if n := count(t, db, `SELECT count(*) FROM event_outbox WHERE event_type = 'queue_worker_silent' AND event_subject_ref = 'exec_r61'`); n != 2 {
		t.Fatalf("exec_r61 after the window: %d silent alerts, want 2 (the old one and one new)", n)
	}
	if n := count(t, db, `SELECT count(*) FROM event_outbox WHERE event_type = 'queue_worker_silent' AND event_subject_ref = 'exec_r59'`); n != 1 {
		t.Fatalf("exec_r59 inside the window: %d silent alerts, want 1", n)
	}

	// Escalation inside the window, after a resume: warning 10 s ago, now critical -> emitted.
	register(t, db, "exec_x", 10, 30)
	silence(t, db, "exec_x", 45)
	backdateAlert(t, db, "exec_x", 10, "warning")
	db.Exec(t, `SELECT fn_queue_heartbeat_pause('exec_x', 'maintenance', 'ops')`)
	db.Exec(t, `SELECT fn_queue_heartbeat_resume('exec_x', 'ops')`)
	silence(t, db, "exec_x", 150) // gap_ratio 15: critical
	staleCheck(t, db.Pool)
	got := alerts(t, db, "exec_x")
	if len(got) != 2 || got[1].Severity != "critical" || got[1].Payload["alert"] != "escalation" {
		t.Fatalf("exec_x escalation inside the window: %+v", got)
	}
	if out := staleCheck(t, db.Pool); len(alerts(t, db, "exec_x")) != 2 {
		t.Fatalf("critical again inside the window must be suppressed: %v", out)
	}
}

// Rule (consistency): severity is decided on the very gap_ratio that is reported —
// a payload or view row never shows gap_ratio >= 10 with severity warning (or < 10 with
// critical). 9999 s at a 1000 s cadence is 9.999: reported 9.99, warning.
func TestStaleCheck_SeverityAgreesWithReportedGapRatio(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	setConfig(t, db, "queue.heartbeat.stale_threshold_seconds", "0")
	register(t, db, "exec_g", 1000, 30)
	silence(t, db, "exec_g", 9999)
	hint, sev, viewRatio := heartbeatView(t, db.Pool, "exec_g")
	staleCheck(t, db.Pool)
	got := alerts(t, db, "exec_g")
	if len(got) != 1 || hint != "stale" || sev == nil {
		t.Fatalf("want one alert and a stale row: %+v, %s", got, hint)
	}
	ratio := num(t, got[0].Payload, "gap_ratio")
	if (ratio >= 10) != (got[0].Severity == "critical") {
		t.Fatalf("stale-check: gap_ratio %v reported with severity %s", ratio, got[0].Severity)
	}
	if (viewRatio >= 10) != (*sev == "critical") {
		t.Fatalf("v_queue_health: gap_ratio %v shown with severity %s", viewRatio, *sev)
	}
	// never over-reported: the true ratio is 9.999.. (or 10.000.. if a second ticked)
	if age := num(t, got[0].Payload, "age_seconds"); ratio > age/1000 {
		t.Fatalf("gap_ratio %v exceeds age/cadence %v", ratio, age/1000)
	}
}

// Rule: every silent executor is alerted, even one whose alert-state row is missing. The
// alert state (queue_stale_alert) is made by the heartbeat table's AFTER INSERT trigger; a
// heartbeat row that came in without it firing (a data-only restore with
// --disable-triggers, logical replication: session_replication_role = replica) had none,
// and the check, which visits only executors that have one, counted it a candidate and
// never alerted it (reported only as skipped_locked, as if another check held it).
func TestStaleCheck_AnExecutorWithoutAlertStateIsAlerted(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	conn := db.Conn(t)
	for _, q := range []string{
		`SET session_replication_role = replica`,
		`INSERT INTO queue_heartbeat (executor_id, executor_kind, expected_cadence_seconds, stale_threshold_seconds, last_beat_at, ticks_total)
		 VALUES ('restored', 'Agent', 60, 180, now() - interval '1 hour', 10)`,
		`RESET session_replication_role`,
	} {
		if _, err := conn.Exec(ctx(t), q); err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM queue_stale_alert WHERE executor_id = 'restored'`); n != 0 {
		t.Fatalf("the fixture must have no alert-state row, has %d", n)
	}
	out := staleCheck(t, db.Pool)
	if num(t, out, "stale") != 1 || num(t, out, "emitted") != 1 || num(t, out, "skipped_locked") != 0 {
		t.Fatalf("a silent executor without an alert-state row must be alerted: %v", out)
	}
	if n := count(t, db, `SELECT count(*) FROM event_outbox WHERE event_type = 'queue_worker_silent' AND event_subject_ref = 'restored'`); n != 1 {
		t.Fatalf("%d queue_worker_silent events, want 1", n)
	}
	// Its alert state is kept like anyone's: the next check is inside the window.
	if out := staleCheck(t, db.Pool); num(t, out, "suppressed") != 1 || num(t, out, "emitted") != 0 {
		t.Fatalf("the next check must know the alert: %v", out)
	}
}
