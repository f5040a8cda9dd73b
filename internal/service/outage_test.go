package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/iu-core/event-worker/internal/metrics"
	"github.com/iu-core/event-worker/internal/migrate"
	"github.com/iu-core/event-worker/internal/pgtest"
)

// counter is the value of one sample of a counter family (labels: name=value pairs).
func counter(t *testing.T, m *metrics.Metrics, name string, labels ...string) float64 {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	samples:
		for _, s := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range s.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue samples
				}
			}
			return s.GetCounter().GetValue()
		}
	}
	return 0
}

// stepsWithin is how many backoff steps (min doubling to max, each at least frac of its
// nominal length) fit into d: the most retries, or summary lines, that d can hold.
func stepsWithin(d, lo, hi time.Duration, frac float64) int {
	n, sum, step := 0, time.Duration(0), lo
	for {
		sum += time.Duration(float64(step) * frac)
		if sum > d {
			return n
		}
		n++
		step = min(2*step, hi)
	}
}

// logRecord is one JSON log line.
type logRecord map[string]any

func records(t *testing.T, text string) []logRecord {
	t.Helper()
	var out []logRecord
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if l == "" {
			continue
		}
		var r logRecord
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("log line is not JSON: %v\n%s", err, l)
		}
		out = append(out, r)
	}
	return out
}

// Rule: a database outage is retried and logged on an exponential backoff, not once per
// poll: with a 100 ms poll and a heartbeat due every 100 ms (which logged two WARN lines
// per attempt, twenty a second here), and /readyz probed twenty times, the runner logs the
// first failure, then at most one summary line per backoff step (each saying how many
// failures it did not log), makes no more worker runs than the backoff allows, and logs one
// INFO line when the database is back, with the outage's length; the failures the lines
// account for add up to every failure counted. (A private cluster, stopped and started
// again, so the other tests' server is not disturbed.)
func TestOutageRetriesAndLogsOnABackoff(t *testing.T) {
	ctx := pgtest.Ctx(t)
	srv, err := pgtest.StartLocalWith(ctx, "", pgtest.LocalOptions{})
	if err != nil {
		pgtest.Unavailable(t, "no local PostgreSQL binaries for a private cluster: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	if err := migrate.Up(ctx, srv.AdminURL); err != nil {
		t.Fatal(err)
	}
	admin, err := pgxpool.New(ctx, srv.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `SELECT fn_iu_route_worker_register('w')`); err != nil {
		t.Fatal(err)
	}
	admin.Close()

	var logs logSink
	m := metrics.New()
	c := cfg()
	c.PollInterval = 100 * time.Millisecond // the old retry cap, and the heartbeat's cadence
	c.StaleCheckInterval, c.ReapInterval = 200*time.Millisecond, 200*time.Millisecond
	s := New(c, realStore(runnerPool(t, srv.AdminURL, 2*time.Second)), nil, logs.logger(), m)
	r := startService(t, s)
	eventually(t, "a good pass before the outage", func() bool {
		return counter(t, m, "iu_runner_worker_runs_total", "worker", "w", "outcome", "gated") >= 1
	})

	halted := len(logs.String()) // (the first failure may be logged before Halt returns)
	if err := srv.Halt(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("log since the halt:\n%s", logs.String()[halted:])
		}
	}()
	eventually(t, "the first failure logged", func() bool {
		return strings.Contains(logs.String()[halted:], `"level":"WARN"`)
	})
	errorsBefore := counter(t, m, "iu_runner_db_errors_total", "op", "worker_run")
	client := http.Client{Timeout: 3 * time.Second}
	for range 20 { // a readiness probe that keeps asking
		if resp, err := client.Get("http://" + r.Addr() + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("/readyz during the outage: %d", resp.StatusCode)
			}
		}
	}
	var first time.Time // when the first failure was logged
	for _, rec := range records(t, logs.String()[halted:]) {
		if first.IsZero() && rec["level"] == "WARN" {
			if first, err = time.Parse(time.RFC3339Nano, rec["time"].(string)); err != nil {
				t.Fatal(err)
			}
		}
	}
	const window = 4 * time.Second // the measured period, from the first failure line on
	time.Sleep(time.Until(first.Add(window)))
	runs := counter(t, m, "iu_runner_db_errors_total", "op", "worker_run") - errorsBefore
	during := logs.String()[halted:]
	observed := time.Since(first) // everything counted happened before now

	warns := 0
	for _, rec := range records(t, during) {
		if rec["level"] == "WARN" {
			warns++
		}
	}
	// the first line, then one per step of 250 ms doubling that fits (lines are spaced by
	// whole steps); retries may come 20% early (jitter)
	maxLines := 1 + stepsWithin(observed, DefaultRetryMin, DefaultRetryMax, 1)
	maxRuns := 1 + stepsWithin(observed, DefaultRetryMin, DefaultRetryMax, 0.8)
	t.Logf("in %s of outage: %d WARN lines (bound %d), %v failed worker runs (bound %d)", observed.Round(time.Millisecond), warns, maxLines, runs, maxRuns)
	if warns > maxLines {
		t.Fatalf("%d WARN lines in %s of outage, the backoff allows %d:\n%s", warns, observed.Round(time.Millisecond), maxLines, during)
	}
	if runs > float64(maxRuns) {
		t.Fatalf("%v worker runs failed in %s of outage, the backoff allows %d: the retries do not back off", runs, observed.Round(time.Millisecond), maxRuns)
	}

	resumeAt := time.Now()
	if err := srv.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	okBefore := counter(t, m, "iu_runner_worker_runs_total", "worker", "w", "outcome", "gated")
	// the next retry is at most one step (here at most 8 s) away
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String()[halted:], "database reachable again") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	eventually(t, "a good pass after the outage", func() bool {
		return counter(t, m, "iu_runner_worker_runs_total", "worker", "w", "outcome", "gated") > okBefore
	})
	r.stop(t)

	var back []logRecord
	accounted := 0.0
	for _, rec := range records(t, logs.String()[halted:]) {
		switch rec["msg"] {
		case "database still unreachable":
			accounted += 1 + rec["suppressed"].(float64)
		case "database reachable again":
			back = append(back, rec)
		default:
			if strings.HasPrefix(rec["msg"].(string), "database unreachable") {
				accounted++
			}
		}
	}
	if len(back) != 1 || back[0]["level"] != "INFO" {
		t.Fatalf("want exactly one INFO line when the database is back, got %d:\n%s", len(back), logs.String()[halted:])
	}
	if got, least := back[0]["outage_seconds"].(float64), resumeAt.Sub(first).Seconds(); got < least {
		t.Fatalf("the outage is reported as %.3fs, but the database was away at least %.3fs", got, least)
	}
	failures := back[0]["failures"].(float64)
	accounted += back[0]["suppressed"].(float64)
	if accounted != failures {
		t.Fatalf("the lines account for %v failures, the outage counted %v", accounted, failures)
	}
	var counted float64
	for _, op := range []string{"worker_run", "heartbeat", "stale_check", "partitions", "queue_health", "reap", "prune"} {
		counted += counter(t, m, "iu_runner_db_errors_total", "op", op)
	}
	if failures < counted { // (and /readyz's failures, which have no counter)
		t.Fatalf("the outage counted %v failures, the db error counters %v", failures, counted)
	}
}

// Rule: only a database that did not answer is an outage (backed off and summarised): a
// failed connection, a broken or timed-out connection, a server shutting down, starting up
// or full. An answer that refused the call (a SQL error, a statement timeout) is logged as
// it comes, and our own cancellation is neither.
func TestUnavailableClassifiesErrors(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{&pgconn.ConnectError{}, true},
		{fmt.Errorf("pinging: %w", &pgconn.ConnectError{}), true},
		{&pgconn.PgError{Code: "57P01"}, true},
		{&pgconn.PgError{Code: "57P03"}, true},
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "53300"}, true},
		{context.DeadlineExceeded, true},
		{errors.New("unexpected EOF"), true},
		{&pgconn.PgError{Code: "42501"}, false},
		{&pgconn.PgError{Code: "57014"}, false},
		{&pgconn.PgError{Code: "P0002"}, false},
		{context.Canceled, false},
		{nil, false},
	} {
		if got := Unavailable(c.err); got != c.want {
			t.Errorf("Unavailable(%#v) = %v, want %v", c.err, got, c.want)
		}
	}
}
