package queuehealth

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

type alert struct {
	Type, Stream, Lane, Severity, SubjectTable, SubjectRef string
	Payload                                                obj
}

func alerts(t testing.TB, db *pgtest.DB, executor string) []alert {
	t.Helper()
	rows, err := db.Pool.Query(ctx(t), `
		SELECT event_type, event_stream, delivery_lane, event_severity, event_subject_table, event_subject_ref, safe_payload
		  FROM event_outbox
		 WHERE event_domain = 'system' AND event_subject_ref = $1
		 ORDER BY created_at, event_type DESC`, executor)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (alert, error) {
		var a alert
		err := r.Scan(&a.Type, &a.Stream, &a.Lane, &a.Severity, &a.SubjectTable, &a.SubjectRef, &a.Payload)
		return a, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// backdateAlert puts exec in the state the stale-check leaves after alerting its current
// silence `ago` seconds ago: its own alert state (queue_stale_alert, the window memory the
// check reads) says a `severity` alert went out then for the current beat, and the event
// row is written old (as the package owner, the only writer of that type) so the tests'
// counts of events see it. The check itself never reads alerts back from event_outbox.
func backdateAlert(t testing.TB, db *pgtest.DB, exec string, ago int, severity string) {
	t.Helper()
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream, delivery_lane, event_severity,
	                                      event_subject_table, event_subject_ref, safe_payload, occurred_at, created_at)
	            SELECT 'system', 'queue_worker_silent', 'alert', 'immediate', $3, 'queue_heartbeat', h.executor_id,
	                   jsonb_build_object('executor_id', h.executor_id, 'alert', 'first', 'backdated', true),
	                   now() - make_interval(secs => $2), now() - make_interval(secs => $2)
	              FROM queue_heartbeat h WHERE h.executor_id = $1`, exec, ago, severity)
	db.Exec(t, `UPDATE queue_stale_alert a
	               SET silent_since = h.last_beat_at + make_interval(secs => h.stale_threshold_seconds),
	                   alerted_at = now() - make_interval(secs => $2), alerted_severity = $3, alerted_beat_at = h.last_beat_at,
	                   last_warning_at  = CASE WHEN $3 = 'warning'  THEN now() - make_interval(secs => $2) ELSE a.last_warning_at END,
	                   last_critical_at = CASE WHEN $3 = 'critical' THEN now() - make_interval(secs => $2) ELSE a.last_critical_at END
	              FROM queue_heartbeat h
	             WHERE h.executor_id = a.executor_id AND a.executor_id = $1`, exec, ago, severity)
}

func staleCheck(t testing.TB, q querier) obj {
	t.Helper()
	return callJSON(t, q, `SELECT fn_queue_stale_check()`)
}

// Rule: a stale executor gets exactly one system/queue_worker_silent through
// fn_iu_emit_event with the alert envelope and payload, silent_since being the real
// transition time (last beat + threshold); a second check inside the window emits nothing.
func TestStaleCheck_EmitsOneSilentAlert(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	setConfig(t, db, "queue.heartbeat.stale_threshold_seconds", "0")
	register(t, db, "exec_s", 10, 30)
	register(t, db, "exec_fresh", 10, 30)
	silence(t, db, "exec_s", 45)

	out := staleCheck(t, db.Pool)
	if num(t, out, "checked") != 2 || num(t, out, "stale") != 1 || num(t, out, "emitted") != 1 || num(t, out, "suppressed") != 0 {
		t.Fatalf("first check: %v", out)
	}
	got := alerts(t, db, "exec_s")
	if len(got) != 1 {
		t.Fatalf("want 1 alert, got %d", len(got))
	}
	a := got[0]
	if a.Type != "queue_worker_silent" || a.Stream != "alert" || a.Lane != "immediate" || a.Severity != "warning" ||
		a.SubjectTable != "queue_heartbeat" || a.SubjectRef != "exec_s" {
		t.Fatalf("envelope: %+v", a)
	}
	if a.Payload["executor_id"] != "exec_s" || num(t, a.Payload, "expected_cadence_seconds") != 10 {
		t.Fatalf("payload: %v", a.Payload)
	}
	age := num(t, a.Payload, "age_seconds")
	if age < 45 || age > 50 {
		t.Fatalf("age_seconds = %v", age)
	}
	if r := num(t, a.Payload, "gap_ratio"); r < 4.5 || r > 5 {
		t.Fatalf("gap_ratio = %v, want age/cadence", r)
	}
	var exact bool
	db.QueryRow(t, `SELECT ($1::timestamptz) = last_beat_at + interval '30 seconds' FROM queue_heartbeat WHERE executor_id = 'exec_s'`,
		[]any{a.Payload["silent_since"]}, &exact)
	if !exact {
		t.Fatalf("silent_since %v is not last_beat_at + threshold", a.Payload["silent_since"])
	}

	out = staleCheck(t, db.Pool)
	if num(t, out, "stale") != 1 || num(t, out, "emitted") != 0 || num(t, out, "suppressed") != 1 {
		t.Fatalf("second check inside the window: %v", out)
	}
	if n := len(alerts(t, db, "exec_s")); n != 1 {
		t.Fatalf("alerts after second check = %d", n)
	}
	if n := len(alerts(t, db, "exec_fresh")); n != 0 {
		t.Fatalf("a fresh executor was alerted")
	}
}

// Rule: severity is warning while gap_ratio < 10 and critical from 10; an escalation
// warning -> critical emits inside the window; after 2 x threshold the alert repeats.
func TestStaleCheck_SeverityEscalationAndWindow(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	setConfig(t, db, "queue.heartbeat.stale_threshold_seconds", "0")
	register(t, db, "exec_e", 10, 50)
	silence(t, db, "exec_e", 95) // gap_ratio 9.5: warning
	if out := staleCheck(t, db.Pool); num(t, out, "emitted") != 1 {
		t.Fatalf("first: %v", out)
	}
	silence(t, db, "exec_e", 100) // gap_ratio 10: critical, inside the 100 s window
	if out := staleCheck(t, db.Pool); num(t, out, "emitted") != 1 || num(t, out, "escalated") != 1 {
		t.Fatalf("escalation: %v", out)
	}
	if out := staleCheck(t, db.Pool); num(t, out, "emitted") != 0 || num(t, out, "suppressed") != 1 {
		t.Fatalf("critical again inside the window: %v", out)
	}
	got := alerts(t, db, "exec_e")
	var sev []string
	for _, a := range got {
		sev = append(sev, a.Severity)
	}
	if fmt.Sprint(sev) != "[warning critical]" {
		t.Fatalf("severities = %v", sev)
	}
	if got[0].Payload["alert"] != "first" || got[1].Payload["alert"] != "escalation" {
		t.Fatalf("alert kinds: %v / %v", got[0].Payload["alert"], got[1].Payload["alert"])
	}

	// The window (2 x 50 s) is read from the check's own alert state: a critical alert 99 s ago still
	// holds it, one 101 s ago does not and the alert repeats once.
	register(t, db, "exec_w99", 10, 50)
	register(t, db, "exec_w101", 10, 50)
	silence(t, db, "exec_w99", 1000)
	silence(t, db, "exec_w101", 1000)
	backdateAlert(t, db, "exec_w99", 99, "critical")
	backdateAlert(t, db, "exec_w101", 101, "critical")
	if out := staleCheck(t, db.Pool); num(t, out, "emitted") != 1 || num(t, out, "suppressed") != 2 {
		t.Fatalf("window check: %v", out)
	}
	if got := alerts(t, db, "exec_w99"); len(got) != 1 {
		t.Fatalf("exec_w99 inside the window: %+v", got)
	}
	if got := alerts(t, db, "exec_w101"); len(got) != 2 || got[1].Payload["alert"] != "repeat" || got[1].Severity != "critical" {
		t.Fatalf("exec_w101 after the window: %+v", got)
	}
}

// Rule: an alerted executor that beats again gets one system/queue_worker_recovered
// (severity info) at the next check, and the bookkeeping is cleared so a new silence
// alerts afresh.
func TestStaleCheck_RecoveryReportedOnce(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	setConfig(t, db, "queue.heartbeat.stale_threshold_seconds", "0")
	register(t, db, "exec_r", 10, 30)
	silence(t, db, "exec_r", 500)
	staleCheck(t, db.Pool)
	db.Exec(t, `SELECT fn_queue_heartbeat_write('exec_r', '{}', 'w')`)

	out := staleCheck(t, db.Pool)
	if num(t, out, "recovered") != 1 || num(t, out, "emitted") != 0 || num(t, out, "stale") != 0 {
		t.Fatalf("recovery check: %v", out)
	}
	if out = staleCheck(t, db.Pool); num(t, out, "recovered") != 0 {
		t.Fatalf("recovery must be reported once: %v", out)
	}
	got := alerts(t, db, "exec_r")
	if len(got) != 2 || got[1].Type != "queue_worker_recovered" || got[1].Severity != "info" ||
		got[1].Payload["executor_id"] != "exec_r" || got[1].Payload["reason"] != "beat" {
		t.Fatalf("alerts: %+v", got)
	}
	var cleared bool
	db.QueryRow(t, `SELECT silent_since IS NULL AND alerted_at IS NULL AND alerted_severity IS NULL FROM queue_stale_alert WHERE executor_id = 'exec_r'`, nil, &cleared)
	if !cleared {
		t.Fatal("bookkeeping not cleared")
	}
	// A new silence right after is a new incident, but the window rule holds: a
	// silent alert for exec_r went out less than 2 x 30 s ago, so nothing is emitted yet.
	silence(t, db, "exec_r", 500)
	if out = staleCheck(t, db.Pool); num(t, out, "emitted") != 0 || num(t, out, "suppressed") != 1 {
		t.Fatalf("new silence after recovery, inside the window: %v", out)
	}
	// Not stale any more only because the threshold was raised: the silence is closed too,
	// but the event says so instead of claiming a beat (no false heal).
	register(t, db, "exec_t", 10, 30)
	silence(t, db, "exec_t", 500)
	if out = staleCheck(t, db.Pool); num(t, out, "emitted") != 1 {
		t.Fatalf("exec_t alert: %v", out)
	}
	db.Exec(t, `SELECT fn_queue_heartbeat_register('exec_t', 'external_worker', '{iu}', 10, 100000, 'ops')`)
	if out = staleCheck(t, db.Pool); num(t, out, "recovered") != 1 {
		t.Fatalf("threshold raised: %v", out)
	}
	got = alerts(t, db, "exec_t")
	if last := got[len(got)-1]; last.Type != "queue_worker_recovered" || last.Payload["reason"] != "threshold_raised" {
		t.Fatalf("last alert: %+v", last)
	}
}

// Rule: the global floor (queue.heartbeat.stale_threshold_seconds) lifts every
// threshold — huge makes the stale-check inert; a missing or invalid value means no floor.
func TestStaleCheck_GlobalFloor(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	register(t, db, "exec_f", 10, 30)
	silence(t, db, "exec_f", 45)

	setConfig(t, db, "queue.heartbeat.stale_threshold_seconds", "60") // the seeded default
	if out := staleCheck(t, db.Pool); num(t, out, "stale") != 0 || num(t, out, "floor_seconds") != 60 {
		t.Fatalf("45 s under a 60 s floor is not stale: %v", out)
	}
	silence(t, db, "exec_f", 100000)
	setConfig(t, db, "queue.heartbeat.stale_threshold_seconds", "999999999")
	if out := staleCheck(t, db.Pool); num(t, out, "stale") != 0 || num(t, out, "emitted") != 0 {
		t.Fatalf("a huge floor must make the check inert: %v", out)
	}
	for _, bad := range []string{"abc", "-5", "1e3", ""} {
		setConfig(t, db, "queue.heartbeat.stale_threshold_seconds", bad)
		if out := staleCheck(t, db.Pool); num(t, out, "floor_seconds") != 0 || num(t, out, "stale") != 1 {
			t.Fatalf("invalid floor %q must mean no floor: %v", bad, out)
		}
	}
	db.Exec(t, `DELETE FROM dot_config WHERE key = 'queue.heartbeat.stale_threshold_seconds'`)
	if out := staleCheck(t, db.Pool); num(t, out, "floor_seconds") != 0 || num(t, out, "stale") != 1 {
		t.Fatalf("missing floor must mean no floor: %v", out)
	}
	// The alert payload reports the effective threshold and silent_since uses it.
	setConfig(t, db, "queue.heartbeat.stale_threshold_seconds", "600")
	register(t, db, "exec_f2", 10, 30)
	silence(t, db, "exec_f2", 100000)
	staleCheck(t, db.Pool)
	got := alerts(t, db, "exec_f2")
	if p := got[len(got)-1].Payload; num(t, p, "stale_threshold_seconds") != 600 {
		t.Fatalf("payload threshold: %v", p)
	}
}

// Rule: two stale-checks running at once never emit twice. Eight sessions, each on its own
// connection, start together behind a barrier over 40 stale executors: exactly 40 alerts.
func TestStaleCheck_ConcurrentChecksNeverEmitTwice(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	db.Exec(t, `INSERT INTO queue_heartbeat (executor_id, executor_kind, last_beat_at, expected_cadence_seconds, stale_threshold_seconds)
	            SELECT 'exec_c' || g, 'DOT', now() - interval '1 hour', 10, 30 FROM generate_series(1, 40) g`)
	const sessions = 8
	conns := make([]*pgx.Conn, sessions)
	for i := range conns {
		conns[i] = db.Conn(t)
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	emitted := make([]float64, sessions)
	errs := make([]error, sessions)
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			var raw obj
			errs[i] = conns[i].QueryRow(ctx(t), `SELECT fn_queue_stale_check()`).Scan(&raw)
			if errs[i] == nil {
				emitted[i] = raw["emitted"].(float64)
			}
		}()
	}
	close(start)
	wg.Wait()
	total := 0.0
	for i := range errs {
		if errs[i] != nil {
			t.Fatalf("session %d: %v", i, errs[i])
		}
		total += emitted[i]
	}
	n := count(t, db, `SELECT count(*) FROM event_outbox WHERE event_type = 'queue_worker_silent'`)
	d := count(t, db, `SELECT count(*) FROM (SELECT event_subject_ref FROM event_outbox WHERE event_type = 'queue_worker_silent' GROUP BY 1 HAVING count(*) > 1) x`)
	if total != 40 || n != 40 || d != 0 {
		t.Fatalf("emitted %v (sum of summaries), %d events, %d executors alerted twice; want 40, 40, 0", total, n, d)
	}
}

// Rule (issue 21): no caller can suppress another's alerts. An executor runs the stale-check
// in a transaction it keeps open: it holds every stale executor's alert-state row until it
// ends, and its rollback erases the alerts it wrote. Before, every other check, the
// runner's included, skipped those rows (emitted 0, skipped_locked 8): no alert for any
// stale executor, nothing said, for as long as that transaction lived. Now the next check
// waits at most 1 s for it, then alerts every stale executor anyway within that one call,
// from the committed state (contended), naming the holder (blocked_by: pid, login, state);
// the holder's rollback erases only its own alerts; the next check, holding the rows, folds
// the contended alerts in (no repeat inside the window) and reports the recovery.
func TestStaleCheck_AnOpenCheckBlindsNobody(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	setConfig(t, db, "queue.heartbeat.stale_threshold_seconds", "0")
	for i := 1; i <= 8; i++ {
		register(t, db, fmt.Sprintf("exec_o%d", i), 10, 30)
		silence(t, db, fmt.Sprintf("exec_o%d", i), 3600)
	}
	holder, holderRole := login(t, db, "hold", "dot_executor")
	runner, _ := login(t, db, "run", "dot_executor")
	tx, err := holder.Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx(t))
	if out := staleCheck(t, tx); num(t, out, "emitted") != 8 {
		t.Fatalf("holder: %v", out)
	}
	var holderPID float64
	if err := tx.QueryRow(ctx(t), `SELECT pg_backend_pid()::float8`).Scan(&holderPID); err != nil {
		t.Fatal(err)
	}
	if _, err := runner.Exec(ctx(t), `SET statement_timeout = '10s'`); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	out := staleCheck(t, runner)
	took := time.Since(began)
	if num(t, out, "emitted") != 8 || num(t, out, "contended") != 8 || num(t, out, "skipped_locked") != 0 || took > 3*time.Second {
		t.Fatalf("the runner's check while another holds it open (%v): %v", took, out)
	}
	blocked, _ := out["blocked_by"].([]any)
	if len(blocked) != 1 || blocked[0].(map[string]any)["pid"] != holderPID || blocked[0].(map[string]any)["usename"] != holderRole {
		t.Fatalf("blocked_by must name the holder (pid %v, login %s): %v", holderPID, holderRole, out["blocked_by"])
	}
	if err := tx.Rollback(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, `SELECT count(*) FROM event_outbox WHERE event_type = 'queue_worker_silent'
	                       AND safe_payload->>'contended' = 'true' AND safe_payload->'blocked_by'->0->>'usename' = $1`, holderRole); n != 8 {
		t.Fatalf("alerts that survived the holder's rollback: %d, want 8 naming the holder", n)
	}
	if out = staleCheck(t, runner); num(t, out, "emitted") != 0 || num(t, out, "suppressed") != 8 || num(t, out, "contended") != 0 {
		t.Fatalf("the next check folds the contended alerts in (no repeat inside the window): %v", out)
	}
	if n := count(t, db, `SELECT count(*) FROM queue_stale_alert_contended`); n != 0 {
		t.Fatalf("%d contended alerts left unfolded", n)
	}
	db.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now() WHERE executor_id = 'exec_o1'`)
	if out = staleCheck(t, runner); num(t, out, "recovered") != 1 {
		t.Fatalf("a contended alert's silence ends with a recovery: %v", out)
	}
}

// Rule (issue 21): a no-grant login cannot touch the stale-check at all: it takes no lock
// a stale-check meets (the alert-state rows and the checks' turn are tables granted to no
// one), so taking every advisory lock it likes changes nothing.
func TestStaleCheck_NoGrantLoginCannotDelayIt(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	register(t, db, "exec_n", 10, 30)
	silence(t, db, "exec_n", 3600)
	nobody, _ := login(t, db, "nobody")
	for _, stmt := range []string{
		`LOCK TABLE queue_stale_alert IN ACCESS EXCLUSIVE MODE`,
		`SELECT 1 FROM queue_stale_check_serial FOR UPDATE`,
		`SELECT 1 FROM queue_stale_alert FOR UPDATE`,
	} {
		tx, err := nobody.Begin(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		_, err = tx.Exec(ctx(t), stmt)
		_ = tx.Rollback(ctx(t))
		pgtest.RequireSQLState(t, err, "42501")
	}
	tx, err := nobody.Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx(t))
	if _, err := tx.Exec(ctx(t), `SELECT pg_advisory_lock(k, j) FROM generate_series(0, 3) k, generate_series(0, 3) j`); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if out := staleCheck(t, db.Pool); num(t, out, "emitted") != 1 || num(t, out, "contended") != 0 || time.Since(began) > time.Second {
		t.Fatalf("stale-check with a no-grant login's locks held (%v): %v", time.Since(began), out)
	}
}

// Rule: the check is fast on the common path: <= 100 ms over 10,000 fresh
// executors (best of five, so a busy CI neighbour does not decide it).
func TestStaleCheck_FastOver10kFreshExecutors(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	db.Exec(t, `INSERT INTO queue_heartbeat (executor_id, executor_kind, expected_cadence_seconds, stale_threshold_seconds)
	            SELECT 'exec_' || g, 'external_worker', 60, 180 FROM generate_series(1, 10000) g`)
	db.Exec(t, `ANALYZE queue_heartbeat`)
	var times []time.Duration
	for range 5 {
		began := time.Now()
		out := staleCheck(t, db.Pool)
		times = append(times, time.Since(began))
		if num(t, out, "checked") != 10000 || num(t, out, "emitted") != 0 {
			t.Fatalf("check: %v", out)
		}
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	t.Logf("stale-check over 10k fresh executors: best %v, median %v", times[0], times[2])
	if times[0] > 100*time.Millisecond {
		t.Fatalf("stale-check took %v (best of 5), want <= 100ms", times[0])
	}
}
