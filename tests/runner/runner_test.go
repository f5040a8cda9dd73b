package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/iu-core/event-worker/internal/migrate"
	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule: a tick with the gates closed is a clean no-op and exits 0 (gated is success).
func TestTickGatedNoOpExitsZero(t *testing.T) {
	t.Parallel()
	db := setup(t, false, false)
	emit(t, db, 10)
	r := runCLI(t, cleanEnv(), "tick", "--database-url", db.URL)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\n%s", r.code, r.stderr)
	}
	s := parseTick(t, r)
	if !s.OK || len(s.Workers) != 1 || !s.Workers[0].Gated || s.Workers[0].Stopped != "gated" || s.Claimed != 0 {
		t.Fatalf("summary %+v", s)
	}
	if n := attempts(t, db); n != 0 {
		t.Fatalf("a gated tick wrote %d attempts", n)
	}
	if s.StaleCheck == nil || s.Reaper == nil {
		t.Fatalf("the stale-check and the reaper must run even when gated: %+v", s)
	}
}

// Rule: one tick drains the backlog — 1,200 events with --batch 500 are routed in one
// tick (500 + 500 + 200: a full batch is followed by the next, a short one ends it).
func TestTickRoutesBacklogInOneTick(t *testing.T) {
	t.Parallel()
	db := setup(t, true, false)
	emit(t, db, 1200)
	r := runCLI(t, cleanEnv(), "tick", "--database-url", db.URL, "--batch", "500")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	s := parseTick(t, r)
	if s.Claimed != 1200 || s.Workers[0].Runs != 3 || s.Workers[0].Stopped != "caught_up" {
		t.Fatalf("summary %+v", s)
	}
	if n := attempts(t, db); n != 1200 {
		t.Fatalf("attempts %d, want 1200", n)
	}
	// and a second tick finds nothing new
	s = parseTick(t, runCLI(t, cleanEnv(), "tick", "--database-url", db.URL, "--batch", "500"))
	if s.Claimed != 0 || !s.OK {
		t.Fatalf("second tick %+v", s)
	}
}

// Rule: a tick keeps the history partitions (fn_iu_partition_maintain): it records the
// partitions whose txids all finished as closed (here the legacy ones the conversion
// attached), which retention needs before it may drop anything, and prints the document;
// --skip-partitions leaves it out.
func TestTickMaintainsHistoryPartitions(t *testing.T) {
	t.Parallel()
	db := setup(t, true, false)
	closed := func() int {
		var n int
		db.QueryRow(t, `SELECT count(*) FROM iu_history_partition WHERE closed_at IS NOT NULL`, nil, &n)
		return n
	}
	if n := closed(); n != 0 {
		t.Fatalf("%d partitions closed before any maintenance, want 0", n)
	}
	s := parseTick(t, runCLI(t, cleanEnv(), "tick", "--database-url", db.URL, "--skip-partitions"))
	if s.Partitions != nil || closed() != 0 {
		t.Fatalf("--skip-partitions still maintained partitions: %v", s.Partitions)
	}
	r := runCLI(t, cleanEnv(), "tick", "--database-url", db.URL)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	s = parseTick(t, r)
	if s.Partitions == nil || s.Partitions["busy"] != false {
		t.Fatalf("tick summary has no partition maintenance: %+v", s)
	}
	if n := closed(); n != 2 {
		t.Fatalf("after a tick %d partitions are recorded closed, want the 2 legacy ones", n)
	}
}

// Rule: an unreachable database exits 1 with one clear stderr line: a JSON log record
// (every stderr line is JSON) whose error says what failed.
func TestTickUnreachableDatabaseExitsOne(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"tick", "health", "run", "migrate"} {
		args := []string{cmd, "--database-url", "postgres://nobody@127.0.0.1:1/nowhere?sslmode=disable", "--connect-timeout", "3s"}
		if cmd == "migrate" {
			args = append(args, "version")
		}
		r := runCLI(t, cleanEnv(), args...)
		if r.code != 1 {
			t.Fatalf("%s: exit %d, want 1\nstderr: %s", cmd, r.code, r.stderr)
		}
		e := errorRecord(t, r.stderr)
		if e["msg"] != "iu-runner "+cmd+": error" || e["exit_code"] != float64(1) {
			t.Fatalf("%s: stderr lacks a clear error record:\n%s", cmd, r.stderr)
		}
		if msg, _ := e["error"].(string); cmd != "migrate" && !strings.HasPrefix(msg, "connecting to the database") {
			t.Fatalf("%s: error %q", cmd, msg)
		}
	}
}

// Rule: usage errors exit 2 (bad flag, bad value, unknown command or action), and --help
// on every subcommand exits 0 with its usage on stdout.
func TestUsageErrorsExitTwoAndHelpExitsZero(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"tick", "--no-such-flag"},
		{"tick", "--batch", "0"},
		{"run", "--mode", "sometimes"},
		{"run", "--poll-interval", "soon"},
		{"health", "extra-arg"},
		{"migrate", "sideways"},
		{"migrate"},
		{"frobnicate"},
		{},
	} {
		r := runCLI(t, cleanEnv(), args...)
		if r.code != 2 || r.stderr == "" {
			t.Errorf("%v: exit %d, want 2 with a message (stderr %q)", args, r.code, r.stderr)
			continue
		}
		if e := errorRecord(t, r.stderr); e["exit_code"] != float64(2) || e["error"] == "" {
			t.Errorf("%v: error record %v", args, e)
		}
	}
	for _, cmd := range []string{"tick", "run", "health", "migrate"} {
		r := runCLI(t, cleanEnv(), cmd, "--help")
		if r.code != 0 || !strings.Contains(r.stdout, "Usage: iu-runner "+cmd) || !strings.Contains(r.stdout, "-database-url") {
			t.Errorf("%s --help: exit %d\n%s", cmd, r.code, r.stdout)
		}
	}
}

// Rule: migrate applies the embedded migrations (up), reports them (status, version) and
// rolls back (down).
func TestMigrateSubcommand(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmptyDB(t)
	env := cleanEnv()
	if r := runCLI(t, env, "migrate", "version", "--database-url", db.URL); r.code != 0 || strings.TrimSpace(r.stdout) != "0" {
		t.Fatalf("version on an empty db: %d %q %s", r.code, r.stdout, r.stderr)
	}
	r := runCLI(t, env, "migrate", "up", "--database-url", db.URL)
	if r.code != 0 || !strings.Contains(r.stdout, "applied 001_iu_core_schema.sql") {
		t.Fatalf("up: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	v := strings.TrimSpace(runCLI(t, env, "migrate", "version", "--database-url", db.URL).stdout)
	if v == "0" || v == "" {
		t.Fatalf("version after up %q", v)
	}
	if r := runCLI(t, env, "migrate", "status", "--database-url", db.URL); r.code != 0 || strings.Contains(r.stdout, "pending") {
		t.Fatalf("status: %d\n%s", r.code, r.stdout)
	}
	if r := runCLI(t, env, "migrate", "down", "--database-url", db.URL); r.code != 0 || !strings.Contains(r.stdout, "rolled back") {
		t.Fatalf("down: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, env, "migrate", "up", "--database-url", db.URL); r.code != 0 {
		t.Fatalf("up again: %d\n%s", r.code, r.stderr)
	}
}

// Rule (issue 22, item 4): the history partition width is chosen at install, by the
// runner's flag (migrate up --partition-txids N) or, for any client, the session setting
// (PGOPTIONS='-c iu.partition_txids=N'): the partitions the install makes are that wide and
// the width is kept for later ones. A width out of range is a usage error (exit 2), and
// --partition-txids is refused for anything but up.
func TestMigrateUp_PartitionWidthAtInstall(t *testing.T) {
	t.Parallel()
	width := func(db *pgtest.DB) (kept string, widest, narrowest int64) {
		t.Helper()
		db.QueryRow(t, `SELECT value FROM dot_config WHERE key = 'retention.partition_txids'`, nil, &kept)
		db.QueryRow(t, `SELECT max(upper_txid::text::numeric - lower_txid::text::numeric)::bigint,
		                       min(upper_txid::text::numeric - lower_txid::text::numeric)::bigint
		                  FROM iu_history_partition WHERE lower_txid IS NOT NULL`, nil, &widest, &narrowest)
		return
	}
	byFlag := pgtest.NewEmptyDB(t)
	if r := runCLI(t, cleanEnv(), "migrate", "up", "--partition-txids", "3000", "--database-url", byFlag.URL); r.code != 0 {
		t.Fatalf("migrate up --partition-txids 3000: exit %d\n%s", r.code, r.stderr)
	}
	if kept, widest, narrowest := width(byFlag); kept != "3000" || narrowest != 3000 || widest > 3000+200 {
		t.Fatalf("--partition-txids 3000: kept %q, partitions %d..%d txids wide", kept, narrowest, widest)
	}
	byEnv := pgtest.NewEmptyDB(t)
	if r := runCLI(t, cleanEnv("PGOPTIONS=-c iu.partition_txids=4000"), "migrate", "up", "--database-url", byEnv.URL); r.code != 0 {
		t.Fatalf("PGOPTIONS migrate up: exit %d\n%s", r.code, r.stderr)
	}
	if kept, widest, narrowest := width(byEnv); kept != "4000" || narrowest != 4000 || widest > 4000+200 {
		t.Fatalf("PGOPTIONS iu.partition_txids=4000: kept %q, partitions %d..%d txids wide", kept, narrowest, widest)
	}
	for _, args := range [][]string{
		{"migrate", "up", "--partition-txids", "999"},
		{"migrate", "down", "--partition-txids", "5000"},
	} {
		if r := runCLI(t, cleanEnv(), append(args, "--database-url", byFlag.URL)...); r.code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)\n%s", args, r.code, r.stderr)
		}
	}
}

// Rule: with the NOTIFY bridge on, `run` routes a new event within 2 s even though its
// fallback poll is 60 s away: the wake-up came from NOTIFY.
func TestRunNotifyPathRoutesWithinTwoSeconds(t *testing.T) {
	t.Parallel()
	db := setup(t, true, true)
	p := startRun(t, db, "--poll-interval", "60s")
	p.waitMetric(t, "iu_runner_listener_up ", 10*time.Second, func(v float64) bool { return v == 1 })
	for i := range 3 {
		before := attempts(t, db)
		emit(t, db, 1)
		took := waitFor(t, 2*time.Second, fmt.Sprintf("event %d routed via NOTIFY", i), func() (bool, string) {
			n := attempts(t, db)
			return n == before+1, fmt.Sprintf("attempts %d", n)
		})
		t.Logf("event %d routed %s after its commit", i, took)
	}
	// wake-ups coalesce (one pending wake-up covers every event before it), so at least one
	// came from NOTIFY, and none from the poll
	if v, _ := p.metric(`iu_runner_wakeups_total{source="notify"}`); v < 1 {
		t.Fatalf("notify wake-ups %v, want >= 1", v)
	}
	if v, _ := p.metric(`iu_runner_wakeups_total{source="poll"}`); v != 0 {
		t.Fatalf("poll wake-ups %v: the 60s poll must not have fired", v)
	}
	p.stop(t, 10*time.Second)
}

// Rule: `run` survives pg_terminate_backend of all its sessions (pool and LISTEN): it
// reconnects, re-LISTENs and routes the next event, with no restart.
func TestRunRecoversAfterBackendsTerminated(t *testing.T) {
	t.Parallel()
	db := setup(t, true, true)
	p := startRun(t, db, "--poll-interval", "60s")
	p.waitMetric(t, "iu_runner_listener_up ", 10*time.Second, func(v float64) bool { return v == 1 })
	// The listener may be up before the startup pass's pool session has connected: wait
	// until both kinds of session exist, so the kill below really hits both.
	waitFor(t, 10*time.Second, "the LISTEN session and a pool session", func() (bool, string) {
		var n int
		db.QueryRow(t, `SELECT count(*) FROM pg_stat_activity
		                 WHERE application_name = 'iu-runner' AND datname = current_database()`, nil, &n)
		return n >= 2, fmt.Sprintf("%d runner sessions", n)
	})
	var killed int
	db.QueryRow(t, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
	                 WHERE application_name = 'iu-runner' AND datname = current_database()`, nil, &killed)
	if killed < 2 {
		t.Fatalf("terminated %d runner backends, want the LISTEN one and at least one pool one", killed)
	}
	p.waitMetric(t, "iu_runner_listener_reconnects_total ", 10*time.Second, func(v float64) bool { return v >= 1 })
	p.waitMetric(t, "iu_runner_listener_up ", 10*time.Second, func(v float64) bool { return v == 1 })
	before := attempts(t, db)
	emit(t, db, 1)
	waitFor(t, 5*time.Second, "event routed after the backends were terminated", func() (bool, string) {
		n := attempts(t, db)
		return n == before+1, fmt.Sprintf("attempts %d", n)
	})
	if !strings.Contains(p.stderr.String(), "falling back to polling") {
		t.Fatalf("the listener loss was not logged")
	}
	p.stop(t, 10*time.Second)
}

// Rule: SIGTERM stops `run` promptly with exit 0 (well inside the 15 s default grace when
// idle), and /readyz says 503 while draining is not needed to observe: the exit is clean.
func TestRunSIGTERMExitsZeroPromptly(t *testing.T) {
	t.Parallel()
	db := setup(t, true, true)
	p := startRun(t, db)
	emit(t, db, 600) // work in flight or just done: either way the exit is clean
	took := p.stop(t, 5*time.Second)
	t.Logf("exited %s after SIGTERM", took)
	if !strings.Contains(p.stderr.String(), "iu-runner run stopped") {
		t.Fatalf("no stop line in the log")
	}
	// nothing half done: every attempt row belongs to a committed pass whose cursor moved
	var seen, written int64
	db.QueryRow(t, `SELECT events_seen, (SELECT count(*) FROM iu_route_attempt) FROM iu_route_worker_cursor WHERE worker_name = $1`,
		[]any{worker}, &seen, &written)
	if seen != written {
		t.Fatalf("cursor saw %d events but %d attempts exist", seen, written)
	}
}

// slowDelivery makes the delivery seam take 3 s and then fail (as superuser, keeping the
// signature, SECURITY DEFINER and search_path), and routes the test events to it
// (enabled, dry_run = false), so a pass is in flight for 3 s with its attempts uncommitted.
func slowDelivery(t *testing.T, db *pgtest.DB) {
	t.Helper()
	db.Exec(t, `CREATE OR REPLACE FUNCTION public.fn_iu_route_deliver(
	                p_event_snapshot jsonb, p_route_key text, p_route_kind text, p_idempotency_key text)
	            RETURNS jsonb LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
	            BEGIN
	                PERFORM pg_sleep(3);
	                RAISE EXCEPTION 'tests/runner: slow delivery fails' USING ERRCODE = 'feature_not_supported';
	            END $$`)
	db.Exec(t, `INSERT INTO iu_outbound_route (event_domain, event_type, event_stream, route_key, enabled, dry_run)
	            VALUES ('iu', 'runner.test', 'tests', 'slow_route', true, false)`)
}

// waitDeliveryInFlight waits until the runner's fn_iu_route_worker_run is active and
// sleeping inside the delivery seam.
func waitDeliveryInFlight(t *testing.T, db *pgtest.DB) {
	t.Helper()
	waitFor(t, 10*time.Second, "the runner's call in flight in the delivery seam", func() (bool, string) {
		var n int
		db.QueryRow(t, `SELECT count(*) FROM pg_stat_activity
		                 WHERE datname = current_database() AND application_name = 'iu-runner'
		                   AND state = 'active' AND query LIKE '%fn_iu_route_worker_run%' AND wait_event = 'PgSleep'`, nil, &n)
		return n == 1, fmt.Sprintf("%d active", n)
	})
}

// runnerSettled waits until no runner session is active any more (the server finished or
// rolled back whatever it was doing), then returns attempts and the cursor's events_seen.
func runnerSettled(t *testing.T, db *pgtest.DB) (attempts, seen int64, waited time.Duration) {
	t.Helper()
	waited = waitFor(t, 10*time.Second, "no runner statement left on the server", func() (bool, string) {
		var n int
		db.QueryRow(t, `SELECT count(*) FROM pg_stat_activity
		                 WHERE datname = current_database() AND application_name = 'iu-runner' AND state <> 'idle'`, nil, &n)
		return n == 0, fmt.Sprintf("%d busy", n)
	})
	db.QueryRow(t, `SELECT (SELECT count(*) FROM iu_route_attempt WHERE worker_name = $1),
	                       (SELECT events_seen FROM iu_route_worker_cursor WHERE worker_name = $1)`, []any{worker}, &attempts, &seen)
	return attempts, seen, waited
}

// Rule: SIGTERM with a call in flight that outlasts --shutdown-grace: after the grace the
// call is cancelled and the server rolls it back — exit 0 well before the call would have
// ended, zero attempts written, the cursor unmoved. Nothing is half done.
func TestRunSIGTERMRollsBackAfterGrace(t *testing.T) {
	t.Parallel()
	db := setup(t, true, false)
	slowDelivery(t, db)
	emit(t, db, 1)
	p := startRun(t, db, "--shutdown-grace", "1s", "--mode", "poll", "--poll-interval", "60s")
	waitDeliveryInFlight(t, db)
	took := p.stop(t, 3*time.Second)
	if took > 2500*time.Millisecond {
		t.Fatalf("exited %s after SIGTERM: the call was not cancelled after the 1s grace (it sleeps 3s)", took)
	}
	if !strings.Contains(p.stderr.String(), "shutdown grace spent") {
		t.Fatalf("the cancellation was not logged")
	}
	n, seen, waited := runnerSettled(t, db)
	if n != 0 || seen != 0 {
		t.Fatalf("after the rollback: %d attempts, events_seen %d; want 0 and 0", n, seen)
	}
	// the cancellation reached the server: the statement stopped at once, not at the end
	// of its 3 s sleep
	if waited > time.Second {
		t.Fatalf("the runner's statement kept running %s after the exit: the server was not told to stop", waited)
	}
}

// Rule: SIGTERM with a call in flight that ends within --shutdown-grace: the call
// finishes and commits (its attempt and the cursor move together), then exit 0.
func TestRunSIGTERMLetsCallCommitWithinGrace(t *testing.T) {
	t.Parallel()
	db := setup(t, true, false)
	slowDelivery(t, db)
	emit(t, db, 1)
	p := startRun(t, db, "--shutdown-grace", "15s", "--mode", "poll", "--poll-interval", "60s")
	waitDeliveryInFlight(t, db)
	took := p.stop(t, 10*time.Second)
	if n, seen, _ := runnerSettled(t, db); n != 1 || seen != 1 {
		t.Fatalf("after a graceful stop (%s): %d attempts, events_seen %d; want the call's 1 and 1", took, n, seen)
	}
	if strings.Contains(p.stderr.String(), "shutdown grace spent") {
		t.Fatalf("the call was cancelled although it ended within the grace")
	}
}

// Rule: a second SIGTERM during the shutdown grace ends the process at once (the default
// signal handler is back after the first), instead of waiting out the grace.
func TestRunSecondSIGTERMExitsAtOnce(t *testing.T) {
	t.Parallel()
	db := setup(t, true, false)
	slowDelivery(t, db)
	emit(t, db, 1)
	p := startRun(t, db, "--shutdown-grace", "60s", "--mode", "poll", "--poll-interval", "60s")
	waitDeliveryInFlight(t, db)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "draining after the first SIGTERM", func() (bool, string) {
		return strings.Contains(p.stderr.String(), "stop signal: draining"), "no draining line yet"
	})
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(time.Second):
		t.Fatal("the second SIGTERM did not end the process within 1s (it waits out the 60s grace)")
	}
	t.Logf("exited %s after the second SIGTERM: %v", time.Since(start), p.err)
	// the abandoned call is the server's now: it commits or rolls back whole, never half
	if n, seen, _ := runnerSettled(t, db); n != seen {
		t.Fatalf("after a forced exit: %d attempts but events_seen %d: half a batch", n, seen)
	}
}

// Rule: SIGTERM during `tick` stops it between batches: the call in flight finishes and
// commits, no housekeeping call is made, the summary says interrupted, exit 0.
func TestTickSIGTERMStopsBetweenBatches(t *testing.T) {
	t.Parallel()
	db := setup(t, true, false)
	slowDelivery(t, db)
	emit(t, db, 3)
	cmd := exec.Command(binary(t), "tick", "--database-url", db.URL, "--batch", "1")
	cmd.Env = cleanEnv()
	var out, errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	waitDeliveryInFlight(t, db)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("tick exited %v after SIGTERM, want 0\n%s", err, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("tick did not stop within 10s of SIGTERM")
	}
	s := parseTick(t, result{stdout: out.String(), stderr: errb.String()})
	var raw map[string]any
	_ = json.Unmarshal([]byte(strings.TrimSpace(out.String())), &raw)
	if raw["interrupted"] != true || !s.OK || s.Claimed != 1 || s.Workers[0].Runs != 1 || s.StaleCheck != nil || s.Reaper != nil {
		t.Fatalf("summary %s", out.String())
	}
	if n, seen, _ := runnerSettled(t, db); n != 1 || seen != 1 {
		t.Fatalf("%d attempts, events_seen %d; want the one batch in flight committed", n, seen)
	}
}

// Rule: --mode poll routes without NOTIFY: no LISTEN session, no notify wake-ups, the poll
// finds the event.
func TestRunPollModeRoutesWithoutNotify(t *testing.T) {
	t.Parallel()
	db := setup(t, true, false)
	p := startRun(t, db, "--mode", "poll", "--poll-interval", "300ms")
	// let the start-up pass go by, so the events below can only be found by a poll
	p.waitMetric(t, `iu_runner_wakeups_total{source="poll"}`, 5*time.Second, func(v float64) bool { return v >= 1 })
	emit(t, db, 5)
	waitFor(t, 5*time.Second, "events routed by polling", func() (bool, string) {
		n := attempts(t, db)
		return n == 5, fmt.Sprintf("attempts %d", n)
	})
	if v, _ := p.metric(`iu_runner_wakeups_total{source="notify"}`); v != 0 {
		t.Fatalf("notify wake-ups %v in poll mode", v)
	}
	var listeners int
	db.QueryRow(t, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
	                 AND application_name = 'iu-runner' AND query ILIKE 'LISTEN%'`, nil, &listeners)
	if listeners != 0 {
		t.Fatalf("%d LISTEN sessions in poll mode", listeners)
	}
	p.stop(t, 10*time.Second)
}

// Rule: /metrics, /healthz and /readyz answer; the metrics carry the runner's counters,
// the listener gauge and v_queue_health as gauges (the runner's own heartbeat included).
func TestRunEndpoints(t *testing.T) {
	t.Parallel()
	db := setup(t, true, true)
	p := startRun(t, db)
	emit(t, db, 3)
	waitFor(t, 5*time.Second, "events routed", func() (bool, string) {
		n := attempts(t, db)
		return n == 3, fmt.Sprintf("attempts %d", n)
	})
	if code, body := p.get("/healthz"); code != 200 {
		t.Fatalf("/healthz %d %s", code, body)
	}
	if code, body := p.get("/readyz"); code != 200 {
		t.Fatalf("/readyz %d %s", code, body)
	}
	p.waitMetric(t, `iu_runner_events_routed_total{status="skipped",worker="iu_outbound_default"}`, 5*time.Second,
		func(v float64) bool { return v == 3 })
	p.waitMetric(t, `iu_queue_health_age_seconds{domain="",source="heartbeat",subject="iu-runner:test"}`, 5*time.Second,
		func(float64) bool { return true })
	_, body := p.get("/metrics")
	// (counter vectors with no sample yet, such as db errors, are not listed until they have one)
	for _, name := range []string{"iu_runner_run_duration_seconds_bucket", "iu_runner_listener_up", "iu_runner_wakeups_total",
		"iu_runner_mode", "iu_queue_health_stale_executors", "iu_queue_health_backlog", "process_resident_memory_bytes"} {
		if !strings.Contains(body, name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	var beats int64
	db.QueryRow(t, `SELECT ticks_total FROM queue_heartbeat WHERE executor_id = 'iu-runner:test' AND executor_kind = 'external_worker'`, nil, &beats)
	if beats < 1 {
		t.Fatalf("the runner's own heartbeat has %d ticks", beats)
	}
	p.stop(t, 10*time.Second)
	if code, _ := p.get("/readyz"); code != 0 {
		t.Fatalf("/readyz still answers after exit")
	}
}

// Rule: health exits 0 when every row is fresh, 3 with a stale executor (the row marked),
// and --json parses with the same verdict.
func TestHealthExitCodes(t *testing.T) {
	t.Parallel()
	db := setup(t, true, false)
	// a fresh runner: one tick beats the worker's heartbeat
	if r := runCLI(t, cleanEnv(), "tick", "--database-url", db.URL); r.code != 0 {
		t.Fatalf("tick %d %s", r.code, r.stderr)
	}
	r := runCLI(t, cleanEnv(), "health", "--database-url", db.URL)
	if r.code != 0 {
		t.Fatalf("all fresh: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "SOURCE") || !strings.Contains(r.stdout, "heartbeat") {
		t.Fatalf("table:\n%s", r.stdout)
	}
	db.Exec(t, `SELECT fn_queue_heartbeat_tick('stale-executor', 'external_worker')`)
	db.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now() - interval '2 hours' WHERE executor_id = 'stale-executor'`)
	r = runCLI(t, cleanEnv(), "health", "--database-url", db.URL)
	if r.code != 3 {
		t.Fatalf("stale executor: exit %d, want 3\n%s", r.code, r.stdout)
	}
	marked := false
	for _, l := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(l, "!") && strings.Contains(l, "stale-executor") && strings.Contains(l, "stale") {
			marked = true
		}
	}
	if !marked {
		t.Fatalf("the stale row is not marked:\n%s", r.stdout)
	}
	r = runCLI(t, cleanEnv(), "health", "--database-url", db.URL, "--json")
	var j struct {
		OK     bool `json:"ok"`
		Counts struct {
			Stale int `json:"stale"`
		} `json:"counts"`
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &j); err != nil {
		t.Fatalf("--json does not parse: %v\n%s", err, r.stdout)
	}
	if r.code != 3 || j.OK || j.Counts.Stale != 1 || len(j.Rows) < 3 {
		t.Fatalf("--json: exit %d %+v", r.code, j)
	}
	// and back to 0 once it beats again
	db.Exec(t, `SELECT fn_queue_heartbeat_tick('stale-executor', 'external_worker')`)
	if r := runCLI(t, cleanEnv(), "health", "--database-url", db.URL); r.code != 0 {
		t.Fatalf("after the beat: exit %d\n%s", r.code, r.stdout)
	}
	// An executor that beats on time but says status error is alive and failing: before,
	// it read fresh and health exited 0. Now 3, marked error_status; warn is not a problem,
	// and its next ok beat clears it.
	db.Exec(t, `SELECT fn_queue_heartbeat_tick('stale-executor', 'external_worker', 'warn')`)
	if r := runCLI(t, cleanEnv(), "health", "--database-url", db.URL); r.code != 0 {
		t.Fatalf("status warn: exit %d, want 0\n%s", r.code, r.stdout)
	}
	db.Exec(t, `SELECT fn_queue_heartbeat_tick('stale-executor', 'external_worker', 'error')`)
	r = runCLI(t, cleanEnv(), "health", "--database-url", db.URL, "--json")
	var e struct {
		Counts struct {
			ErrorStatus int `json:"error_status"`
		} `json:"counts"`
		Rows []struct {
			Subject    string  `json:"subject"`
			StatusHint string  `json:"status_hint"`
			Severity   *string `json:"severity"`
			Problem    string  `json:"problem"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &e); err != nil {
		t.Fatalf("--json does not parse: %v\n%s", err, r.stdout)
	}
	found := false
	for _, row := range e.Rows {
		if row.Subject == "stale-executor" {
			found = row.StatusHint == "fresh" && row.Severity != nil && *row.Severity == "warning" && row.Problem == "error_status"
		}
	}
	if r.code != 3 || e.Counts.ErrorStatus != 1 || !found {
		t.Fatalf("status error: exit %d, want 3 with the row fresh, severity warning, problem error_status\n%s", r.code, r.stdout)
	}
	db.Exec(t, `SELECT fn_queue_heartbeat_tick('stale-executor', 'external_worker', 'ok')`)
	if r := runCLI(t, cleanEnv(), "health", "--database-url", db.URL); r.code != 0 {
		t.Fatalf("after an ok beat: exit %d\n%s", r.code, r.stdout)
	}
	// A pause is planned maintenance: no alert, exit 0. One left behind after it hid a dead
	// executor forever; past --paused-grace (24 h by default) it is a problem.
	db.Exec(t, `SELECT fn_queue_heartbeat_pause('stale-executor', 'deploy', 'ops')`)
	if r := runCLI(t, cleanEnv(), "health", "--database-url", db.URL); r.code != 0 {
		t.Fatalf("paused just now: exit %d, want 0\n%s", r.code, r.stdout)
	}
	db.Exec(t, `UPDATE queue_heartbeat SET paused_at = now() - interval '25 hours', last_beat_at = now() - interval '25 hours' WHERE executor_id = 'stale-executor'`)
	r = runCLI(t, cleanEnv(), "health", "--database-url", db.URL)
	if r.code != 3 || !strings.Contains(r.stdout, "paused_too_long") {
		t.Fatalf("paused for 25 h: exit %d, want 3 with paused_too_long\n%s", r.code, r.stdout)
	}
	for _, grace := range []string{"48h", "0"} {
		if r := runCLI(t, cleanEnv(), "health", "--database-url", db.URL, "--paused-grace", grace); r.code != 0 {
			t.Fatalf("paused for 25 h, --paused-grace %s: exit %d, want 0\n%s", grace, r.code, r.stdout)
		}
	}
	db.Exec(t, `SELECT fn_queue_heartbeat_resume('stale-executor', 'ops')`)
	if r := runCLI(t, cleanEnv(), "health", "--database-url", db.URL); r.code != 0 {
		t.Fatalf("resumed: exit %d\n%s", r.code, r.stdout)
	}
}

// Rule: open dead letters make health exit 3 (a route that is enabled and not dry-run
// fails closed into the dead letters).
func TestHealthOpenDeadLettersExitThree(t *testing.T) {
	t.Parallel()
	db := setup(t, true, false)
	db.Exec(t, `INSERT INTO iu_outbound_route (event_domain, event_type, event_stream, route_key, enabled, dry_run)
	            VALUES ('iu', 'runner.test', 'tests', 'live_route', true, false)`)
	emit(t, db, 2)
	s := parseTick(t, runCLI(t, cleanEnv(), "tick", "--database-url", db.URL))
	if s.Claimed != 2 {
		t.Fatalf("%+v", s)
	}
	r := runCLI(t, cleanEnv(), "health", "--database-url", db.URL)
	if r.code != 3 || !strings.Contains(r.stdout, "dead_letter_event") || !strings.Contains(r.stdout, "open_dead_letters") {
		t.Fatalf("exit %d\n%s", r.code, r.stdout)
	}
}

// Rule: the flags win over the environment, which wins over the libpq PG* variables; each
// file variant stands at its level next to its value variant (--database-url-file beats
// DATABASE_URL, DATABASE_URL_FILE beats PG*); two sources at one level are refused, and so
// is a connection string file that other users may read. Three databases, each named by
// one source; tick reports which one it used.
func TestConfigPrecedence(t *testing.T) {
	t.Parallel()
	flagDB, envDB, pgDB := setup(t, false, false), setup(t, false, false), setup(t, false, false)
	cc, err := pgx.ParseConfig(pgDB.URL)
	if err != nil {
		t.Fatal(err)
	}
	pgEnv := []string{"PGHOST=" + cc.Host, fmt.Sprintf("PGPORT=%d", cc.Port), "PGUSER=" + cc.User,
		"PGDATABASE=" + cc.Database, "PGSSLMODE=disable"}
	if cc.Password != "" {
		pgEnv = append(pgEnv, "PGPASSWORD="+cc.Password)
	}
	dir := t.TempDir()
	secretFile := func(name, content string, perm os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, perm); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flagFile, envFile := secretFile("flag-url", flagDB.URL, 0o600), secretFile("env-url", envDB.URL, 0o600)
	looseFile := secretFile("loose-url", envDB.URL, 0o644)
	cases := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"flag beats DATABASE_URL and PG*", append([]string{"DATABASE_URL=" + envDB.URL}, pgEnv...), []string{"--database-url", flagDB.URL}, flagDB.Name},
		{"flag file beats DATABASE_URL and PG*", append([]string{"DATABASE_URL=" + envDB.URL}, pgEnv...), []string{"--database-url-file", flagFile}, flagDB.Name},
		{"DATABASE_URL beats PG*", append([]string{"DATABASE_URL=" + envDB.URL}, pgEnv...), nil, envDB.Name},
		{"DATABASE_URL_FILE beats PG*", append([]string{"DATABASE_URL_FILE=" + envFile}, pgEnv...), nil, envDB.Name},
		{"PG* alone", pgEnv, nil, pgDB.Name},
	}
	for _, c := range cases {
		r := runCLI(t, cleanEnv(c.env...), append([]string{"tick"}, c.args...)...)
		if r.code != 0 {
			t.Fatalf("%s: exit %d\n%s", c.name, r.code, r.stderr)
		}
		if s := parseTick(t, r); s.Database != c.want {
			t.Fatalf("%s: used database %q, want %q", c.name, s.Database, c.want)
		}
	}
	refused := []struct {
		name string
		env  []string
		args []string
		code int
		says string
	}{
		{"both flags", nil, []string{"--database-url", flagDB.URL, "--database-url-file", flagFile}, 2, "not both"},
		{"both environment variables", []string{"DATABASE_URL=" + envDB.URL, "DATABASE_URL_FILE=" + envFile}, nil, 1, "both DATABASE_URL and DATABASE_URL_FILE"},
		{"a file other users may read", []string{"DATABASE_URL_FILE=" + looseFile}, nil, 1, "readable by other users"},
	}
	for _, c := range refused {
		r := runCLI(t, cleanEnv(c.env...), append([]string{"tick"}, c.args...)...)
		if rec := errorRecord(t, r.stderr); r.code != c.code || !strings.Contains(fmt.Sprint(rec["error"]), c.says) {
			t.Fatalf("%s: exit %d, want %d with an error saying %q\n%s", c.name, r.code, c.code, c.says, r.stderr)
		}
	}
}

// Rule: a password given with --database-url (readable by every local user in ps while the
// runner runs) is warned about at start, and the warning never shows the password; the
// same password from DATABASE_URL or a file is not warned about. (The throwaway server
// trusts its socket, so the password is carried and ignored.)
func TestPasswordOnCommandLineWarns(t *testing.T) {
	t.Parallel()
	db := setup(t, false, false)
	const secret = "Zq9-s3cret-pw"
	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), secret)
	withPassword := u.String()
	warned := func(stderr string) bool { return strings.Contains(stderr, `"--database-url carries a password`) }

	r := runCLI(t, cleanEnv(), "tick", "--database-url", withPassword)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !warned(r.stderr) || !strings.Contains(r.stderr, `"level":"WARN"`) {
		t.Fatalf("no WARN about the password on the command line:\n%s", r.stderr)
	}
	if strings.Contains(r.stderr+r.stdout, secret) {
		t.Fatalf("the output shows the password:\n%s%s", r.stderr, r.stdout)
	}
	r = runCLI(t, cleanEnv("DATABASE_URL="+withPassword), "tick")
	if r.code != 0 || warned(r.stderr) {
		t.Fatalf("DATABASE_URL with a password: exit %d, warned %v\n%s", r.code, warned(r.stderr), r.stderr)
	}
	r = runCLI(t, cleanEnv(), "tick", "--database-url", db.URL)
	if r.code != 0 || warned(r.stderr) {
		t.Fatalf("--database-url without a password: exit %d, warned %v\n%s", r.code, warned(r.stderr), r.stderr)
	}
}

// Rule: `run` survives a PostgreSQL restart: the pool and the listener reconnect and the
// next event is routed, with no restart of the runner. (A cluster of its own, so the other
// tests' server is not disturbed.)
func TestRunSurvivesPostgresRestart(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Ctx(t)
	srv, err := pgtest.StartLocal(ctx)
	if err != nil {
		pgtest.Unavailable(t, "no local PostgreSQL binaries for a private cluster: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	if err := migrate.Up(ctx, srv.AdminURL); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, srv.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	db := &pgtest.DB{Name: "postgres", URL: srv.AdminURL, Pool: pool}
	db.Exec(t, `SELECT fn_iu_route_worker_register($1)`, worker)
	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'runner.test')`)
	db.Exec(t, `UPDATE dot_config SET value = 'true' WHERE key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled')`)
	db.Exec(t, `INSERT INTO dot_config (key, value) VALUES ('queue.notify.bridge_enabled', 'true') ON CONFLICT (key) DO UPDATE SET value = 'true'`)

	p := startRun(t, db, "--poll-interval", "1s")
	p.waitMetric(t, "iu_runner_listener_up ", 10*time.Second, func(v float64) bool { return v == 1 })
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "the test pool reconnects", func() (bool, string) {
		_, err := pool.Exec(ctx, "SELECT 1")
		return err == nil, fmt.Sprint(err)
	})
	emit(t, db, 1)
	waitFor(t, 15*time.Second, "event routed after the restart", func() (bool, string) {
		var n int64
		err := pool.QueryRow(ctx, `SELECT count(*) FROM iu_route_attempt`).Scan(&n)
		return err == nil && n == 1, fmt.Sprintf("attempts %d err %v", n, err)
	})
	p.waitMetric(t, "iu_runner_listener_up ", 15*time.Second, func(v float64) bool { return v == 1 })
	// the listener was re-established after the restart, not merely never noticed it
	p.waitMetric(t, "iu_runner_listener_reconnects_total ", 15*time.Second, func(v float64) bool { return v >= 1 })
	if code, body := p.get("/readyz"); code != 200 {
		t.Fatalf("/readyz after the restart: %d %s", code, body)
	}
	p.stop(t, 10*time.Second)
}

// Rule: NOTIFY is only a hint — with the bridge off (no notification ever comes), hybrid
// mode's fallback poll routes the event, and notify mode's safety pass (one per
// --stale-check-interval) does too. A missed notification delays work, never loses it.
func TestRunWithoutNotificationsStillRoutes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mode string
		args []string
	}{
		{"hybrid", []string{"--mode", "hybrid", "--poll-interval", "300ms"}},
		{"notify", []string{"--mode", "notify", "--poll-interval", "60s", "--stale-check-interval", "500ms"}},
	} {
		t.Run(c.mode, func(t *testing.T) {
			t.Parallel()
			db := setup(t, true, false)
			p := startRun(t, db, c.args...)
			p.waitMetric(t, "iu_runner_listener_up ", 10*time.Second, func(v float64) bool { return v == 1 })
			p.waitMetric(t, `iu_runner_wakeups_total{source="poll"}`, 5*time.Second, func(v float64) bool { return v >= 1 })
			emit(t, db, 2)
			waitFor(t, 5*time.Second, "events routed without NOTIFY", func() (bool, string) {
				n := attempts(t, db)
				return n == 2, fmt.Sprintf("attempts %d", n)
			})
			if v, _ := p.metric(`iu_runner_wakeups_total{source="notify"}`); v != 0 {
				t.Fatalf("notify wake-ups %v with the bridge off", v)
			}
			p.stop(t, 10*time.Second)
		})
	}
}

// Rule: a burst of NOTIFYs on the wake-up channel (any login may send them) costs at most
// one extra pass, however many notifications it holds: 20,000 notifications committed at
// once (the security review's figure: they made 2,740 passes) make one pass, and the fence
// event sent after them at most one more: at most 2 beyond the baseline (a pass started by
// a reconnection of the listener, which a loaded machine may cause, is not counted). The
// runner's own counters say both that
// the whole burst arrived (iu_runner_notifications_total) and how many passes it made
// (fn_iu_route_worker_run calls: one per pass with a single caught-up worker); nothing is
// timed: the poll and the housekeeping are an hour away, and the count is read once the
// fence is routed.
func TestNotifyBurstCoalescesIntoOnePass(t *testing.T) {
	t.Parallel()
	db := setup(t, true, true)
	p := startRun(t, db, "--poll-interval", "1h", "--stale-check-interval", "1h", "--reap-interval", "1h")
	p.waitMetric(t, "iu_runner_listener_up ", 10*time.Second, func(v float64) bool { return v == 1 })
	runs := func() float64 {
		v, _ := p.metric(`iu_runner_worker_runs_total{outcome="ok",worker="` + worker + `"}`)
		return v
	}
	// settled: both start-up wake-ups (the loop's own and the first LISTEN's) have made
	// their pass, and nothing else wakes the loop for an hour
	p.waitMetric(t, `iu_runner_wakeups_total{source="startup"}`, 10*time.Second, func(v float64) bool { return v == 2 })
	waitFor(t, 10*time.Second, "both start-up passes done", func() (bool, string) {
		n := runs()
		return n >= 2, fmt.Sprintf("runs %v", n)
	})
	base, before := runs(), attempts(t, db)
	reconnectsBase, _ := p.metric(`iu_runner_wakeups_total{source="reconnect"}`)
	received, _ := p.metric("iu_runner_notifications_total ")

	const burst = 20000
	db.Exec(t, `SELECT pg_notify('queue_wake_iu', 'flood ' || g) FROM generate_series(1, $1) g`, burst)
	p.waitMetric(t, "iu_runner_notifications_total ", 30*time.Second, func(v float64) bool { return v >= received+burst })
	emit(t, db, 1) // the fence: routed by a pass that started after the burst was drained
	waitFor(t, 10*time.Second, "the fence event routed", func() (bool, string) {
		n := attempts(t, db)
		return n == before+1, fmt.Sprintf("attempts %d", n)
	})
	reconnects, _ := p.metric(`iu_runner_wakeups_total{source="reconnect"}`)
	passes := runs() - base - (reconnects - reconnectsBase)
	notify, _ := p.metric(`iu_runner_wakeups_total{source="notify"}`)
	t.Logf("%d notifications: %v passes (the fence's included), %v notify wake-ups", burst, passes, notify)
	if passes > 2 {
		t.Fatalf("%d NOTIFYs in one burst and one fence event made %v passes: want at most 2 (one for the burst, one for the fence)", burst, passes)
	}
	p.stop(t, 10*time.Second)
}

// Rule: the batch bound is the SQL's, written once (iu_core.fn_iu_route_worker_max_batch);
// the runner reads it (fn_iu_route_worker_batch_limits) and refuses a --batch outside it as
// a usage error (exit 2) before any run. Moving the bound in SQL moves the runner's.
func TestBatchBoundIsTheSQLs(t *testing.T) {
	t.Parallel()
	db := setup(t, true, false)
	r := runCLI(t, cleanEnv(), "tick", "--batch", "10001", "--database-url", db.URL)
	if r.code != 2 || !strings.Contains(r.stderr, "takes 1..10000 events per call") {
		t.Fatalf("tick --batch 10001: exit %d, want 2 naming the SQL's bound\n%s", r.code, r.stderr)
	}
	if attempts(t, db) != 0 {
		t.Fatal("a refused --batch ran the worker")
	}
	db.Exec(t, `CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_max_batch() RETURNS integer LANGUAGE sql IMMUTABLE AS 'SELECT 20000'`)
	emit(t, db, 3)
	if r := runCLI(t, cleanEnv(), "tick", "--batch", "15000", "--database-url", db.URL); r.code != 0 || parseTick(t, r).Claimed != 3 {
		t.Fatalf("with the SQL bound at 20000, --batch 15000 must run: exit %d\n%s", r.code, r.stderr)
	}
}
