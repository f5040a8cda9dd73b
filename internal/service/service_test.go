package service

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/health"
	"github.com/iu-core/event-worker/internal/metrics"
	"github.com/iu-core/event-worker/internal/store"
)

// fakeDB serves a backlog; block, when set, makes RunWorker wait for it (or the context).
type fakeDB struct {
	mu      sync.Mutex
	backlog int
	runs    []time.Time
	block   chan struct{}
	started chan struct{}
	beats   atomic.Int64
	stales  atomic.Int64
	fail    atomic.Int64 // fail this many calls first
	// per-worker backlogs (when set, backlog is ignored) and the worker of every call
	backlogs map[string]int
	order    []string
	served   map[string]int // a's backlog when each worker was first served
	statuses []string       // heartbeat statuses written
	beatMD   []map[string]any
	holder   string   // another runner process holds the heartbeat row (its instance)
	released []string // instances that handed the row back
}

func (f *fakeDB) RunWorker(ctx context.Context, w string, batch int) (store.WorkerRun, error) {
	if f.fail.Load() > 0 {
		f.fail.Add(-1)
		return store.WorkerRun{}, context.DeadlineExceeded
	}
	if f.block != nil {
		select {
		case f.started <- struct{}{}:
		default:
		}
		select {
		case <-f.block:
		case <-ctx.Done():
			return store.WorkerRun{}, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs = append(f.runs, time.Now())
	f.order = append(f.order, w)
	if f.backlogs != nil {
		if _, ok := f.served[w]; !ok {
			f.served[w] = f.backlogs["a"]
		}
		n := min(batch, f.backlogs[w])
		f.backlogs[w] -= n
		return store.WorkerRun{Worker: w, Claimed: int64(n), AttemptsWritten: int64(n), CaughtUp: n < batch}, nil
	}
	n := min(batch, f.backlog)
	f.backlog -= n
	return store.WorkerRun{Worker: w, Claimed: int64(n), AttemptsWritten: int64(n), CaughtUp: n < batch, ByStatus: map[string]int64{"dry_run": int64(n)}}, nil
}
func (f *fakeDB) StaleCheck(context.Context) (store.StaleCheck, error) {
	f.stales.Add(1)
	return store.StaleCheck{Raw: json.RawMessage(`{}`)}, nil
}
func (f *fakeDB) ReapLeases(context.Context) (store.Reap, error) {
	return store.Reap{Raw: json.RawMessage(`{}`)}, nil
}
func (f *fakeDB) RunnerBeat(_ context.Context, id, instance, status string, md map[string]any, release bool) (store.RunnerBeat, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if release {
		f.released = append(f.released, instance)
		return store.RunnerBeat{ExecutorID: id, Beat: true, Released: true}, nil
	}
	if f.holder != "" && f.holder != instance {
		return store.RunnerBeat{ExecutorID: id, Held: true, HeldBy: &store.RunnerHolder{Instance: f.holder, SessionUser: "other"}}, nil
	}
	f.beats.Add(1)
	f.statuses = append(f.statuses, status)
	f.beatMD = append(f.beatMD, md)
	return store.RunnerBeat{ExecutorID: id, Beat: true}, nil
}
func (f *fakeDB) Ping(context.Context) error                        { return nil }
func (f *fakeDB) QueueHealth(context.Context) ([]health.Row, error) { return nil, nil }
func (f *fakeDB) runCount() int                                     { f.mu.Lock(); defer f.mu.Unlock(); return len(f.runs) }

func cfg() Config {
	return Config{Mode: ModePoll, Workers: []string{"w"}, Batch: 100, PollInterval: time.Hour,
		StaleCheckInterval: time.Hour, ReapInterval: time.Hour, PassBudget: 10 * time.Second,
		ShutdownGrace: 5 * time.Second, ExecutorID: "runner-test", HTTPAddr: "127.0.0.1:0"}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s: not within 5s", what)
}

// Rule: a full batch is followed at once by the next (no poll sleep), until one is short.
func TestFullBatchIsFollowedAtOnce(t *testing.T) {
	db := &fakeDB{backlog: 1050}
	s := New(cfg(), db, nil, quiet(), metrics.New())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	eventually(t, "backlog drained", func() bool { return db.runCount() == 11 })
	// Housekeeping (heartbeat, stale-check) runs after the pass that drained the backlog
	// returns, so the eleventh run can be seen before it: wait for it rather than read it
	// at once (a read at once failed when the scheduler let this goroutine in between).
	eventually(t, "heartbeat and stale-check after the drain", func() bool {
		return db.beats.Load() >= 1 && db.stales.Load() >= 1
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if span := db.runs[10].Sub(db.runs[0]); span > time.Second {
		t.Fatalf("11 batches took %s with a 1h poll: a full batch waited", span)
	}
}

// Rule: a wake-up (NOTIFY) runs a pass at once; a failed pass is retried soon, not at the
// next poll.
func TestWakeAndRetry(t *testing.T) {
	db := &fakeDB{}
	s := New(cfg(), db, nil, quiet(), metrics.New())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.Run(ctx) }()
	eventually(t, "startup pass", func() bool { return db.runCount() == 1 })
	db.fail.Store(2)
	s.Wake("notify")
	eventually(t, "retried after two failures", func() bool { return db.runCount() == 2 })
}

// Rule: on stop, the call in flight finishes (it is not cancelled) and no new batch starts;
// /readyz is 503 while draining.
func TestStopLetsTheCallInFlightFinish(t *testing.T) {
	db := &fakeDB{backlog: 1000, block: make(chan struct{}), started: make(chan struct{}, 1)}
	s := New(cfg(), db, nil, quiet(), metrics.New())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	<-db.started
	cancel()
	eventually(t, "draining", func() bool { return s.draining.Load() })
	rec := get(t, s, "/readyz")
	if rec != http.StatusServiceUnavailable {
		t.Fatalf("/readyz while draining: %d", rec)
	}
	close(db.block) // the call in flight commits
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := db.runCount(); n != 1 {
		t.Fatalf("%d calls completed, want exactly the one in flight (no new batch after stop)", n)
	}
}

// Rule: after --shutdown-grace, the call in flight is cancelled (and the server rolls it back).
func TestStopCancelsAfterGrace(t *testing.T) {
	db := &fakeDB{backlog: 1000, block: make(chan struct{}), started: make(chan struct{}, 1)}
	c := cfg()
	c.ShutdownGrace = 100 * time.Millisecond
	s := New(c, db, nil, quiet(), metrics.New())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	<-db.started
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("did not stop after the grace")
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Fatalf("stopped after %s, before the grace", took)
	}
	if db.runCount() != 0 {
		t.Fatal("the cancelled call completed")
	}
}

func get(t *testing.T, s *Service, path string) int {
	t.Helper()
	resp, err := http.Get("http://" + s.Addr() + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Rule (fairness): with two workers, b is served while a still has a backlog: one batch of
// each in turn, not a's whole backlog first.
func TestPassServesWorkersRoundRobin(t *testing.T) {
	db := &fakeDB{backlogs: map[string]int{"a": 5000, "b": 30}, served: map[string]int{}}
	c := cfg()
	c.Workers = []string{"a", "b"}
	s := New(c, db, nil, quiet(), metrics.New())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	eventually(t, "both drained", func() bool {
		db.mu.Lock()
		defer db.mu.Unlock()
		return db.backlogs["a"] == 0 && db.backlogs["b"] == 0
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if len(db.order) < 2 || db.order[0] != "a" || db.order[1] != "b" {
		t.Fatalf("call order starts %v, want a then b", db.order[:min(len(db.order), 5)])
	}
	if left := db.served["b"]; left < 4000 {
		t.Fatalf("b first served when a had %d events left: a's backlog starved b", left)
	}
}

// Rule: the runner's own heartbeat is written at most every min(poll interval, 10s), not
// on every loop under load; a failed pass is reported as warn (then error) with the last
// error under a payload-safe key, and ok again after a good pass.
func TestHeartbeatCadenceAndStatus(t *testing.T) {
	db := &fakeDB{backlog: 100000}
	c := cfg()
	c.Batch = 10
	c.PassBudget = time.Millisecond // many passes, each followed by housekeeping
	s := New(c, db, nil, quiet(), metrics.New())
	if got := s.BeatInterval(); got != 10*time.Second {
		t.Fatalf("beat interval %s with a 1h poll, want 10s", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	eventually(t, "many passes", func() bool { return db.runCount() > 300 })
	cancel()
	<-done
	if n := db.beats.Load(); n != 1 {
		t.Fatalf("%d heartbeats during %d runs in well under 10s: the loop beats on every pass", n, db.runCount())
	}

	// status: a failing pass is warn with the error, three in a row error, then ok
	db = &fakeDB{}
	c = cfg()
	c.PollInterval = 20 * time.Millisecond // beats at most every 20ms
	c.RetryMin, c.RetryMax = 10*time.Millisecond, 20*time.Millisecond
	s = New(c, db, nil, quiet(), metrics.New())
	db.fail.Store(6)
	ctx, cancel = context.WithCancel(context.Background())
	done = make(chan error)
	go func() { done <- s.Run(ctx) }()
	eventually(t, "recovered", func() bool {
		db.mu.Lock()
		defer db.mu.Unlock()
		n := len(db.statuses)
		return n > 0 && db.statuses[n-1] == "ok" && len(db.runs) > 0
	})
	cancel()
	<-done
	db.mu.Lock()
	defer db.mu.Unlock()
	want := []string{"warn", "error", "ok"}
	var got []string
	for _, st := range db.statuses {
		if len(got) == 0 || got[len(got)-1] != st {
			got = append(got, st)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("statuses %v (deduplicated %v), want %v", db.statuses, got, want)
	}
	for i, st := range db.statuses {
		md := db.beatMD[i]
		if _, has := md["last_error"]; has != (st != "ok") {
			t.Fatalf("beat %d status %s metadata %v", i, st, md)
		}
		for k := range md {
			for _, bad := range []string{"body", "content", "raw", "vector", "embedding", "secret", "token", "password", "ssn", "personal_data"} {
				if k == bad {
					t.Fatalf("heartbeat metadata key %q is refused by the payload hygiene check", k)
				}
			}
		}
	}
}

// Rule: the stale-check cadence must be under half the smallest threshold: exactly half
// is too long, and the gauge says so.
func TestStaleCheckCadence(t *testing.T) {
	for _, c := range []struct {
		every time.Duration
		thr   float64
		want  bool
	}{{30 * time.Second, 60, true}, {29 * time.Second, 60, false}, {time.Minute, 60, true}, {time.Hour, 0, false}} {
		if got := CadenceTooLong(c.every, c.thr); got != c.want {
			t.Errorf("CadenceTooLong(%s, %v) = %v, want %v", c.every, c.thr, got, c.want)
		}
	}
	m := metrics.New()
	threshold := int64(60)
	db := &healthDB{rows: []health.Row{{Source: "heartbeat", Subject: "x", StaleThresholdSeconds: &threshold, StatusHint: "fresh"}}}
	c := cfg()
	c.StaleCheckInterval = 30 * time.Second
	s := New(c, db, nil, quiet(), m)
	s.refreshHealth(context.Background())
	if v := gauge(t, m, "iu_runner_stale_check_interval_too_long"); v != 1 {
		t.Fatalf("iu_runner_stale_check_interval_too_long = %v at exactly half the threshold", v)
	}
}

// Rule: retry backoff jitter stays within ±20% and is not constant.
func TestJitter(t *testing.T) {
	seen := map[time.Duration]bool{}
	for range 200 {
		d := Jitter(time.Second, 5)
		if d < 800*time.Millisecond || d > 1200*time.Millisecond {
			t.Fatalf("jitter %s outside ±20%%", d)
		}
		seen[d] = true
	}
	if len(seen) < 10 {
		t.Fatalf("jitter is not random: %d distinct values", len(seen))
	}
}

// Rule: a scrape during a health refresh sees the old rows or the new ones, never none.
func TestHealthRefreshHasNoEmptyWindow(t *testing.T) {
	m := metrics.New()
	rows := func(n float64) []health.Row {
		backlog := int64(n)
		return []health.Row{{Source: "cursor", Subject: "w", StatusHint: "backlog", Backlog: &backlog}}
	}
	db := &healthDB{rows: rows(1)}
	s := New(cfg(), db, nil, quiet(), m)
	s.refreshHealth(context.Background())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			db.mu.Lock()
			db.rows = rows(float64(i))
			db.mu.Unlock()
			s.refreshHealth(context.Background())
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	for range 300 {
		if n := samples(t, m, "iu_queue_health_backlog"); n != 1 {
			t.Fatalf("a scrape saw %d iu_queue_health_backlog samples during a refresh, want 1", n)
		}
	}
}

type healthDB struct {
	fakeDB
	mu   sync.Mutex
	rows []health.Row
}

func (h *healthDB) QueueHealth(context.Context) ([]health.Row, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rows, nil
}

// samples counts the gathered samples of one metric family.
func samples(t *testing.T, m *metrics.Metrics, name string) int {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return len(f.GetMetric())
		}
	}
	return 0
}

// gauge is the value of an unlabelled gauge.
func gauge(t *testing.T, m *metrics.Metrics, name string) float64 {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// Rule (issue 21): a runner never shares its heartbeat row with another live runner. While
// another process holds the row (same --executor-id), this one beats nothing, says so once
// at WARN naming the holder, and exports iu_runner_heartbeat_standby 1; when the row is
// free it beats (the gauge back to 0, said once at INFO). On a clean stop the holder hands
// the row back, so a restarted runner takes it at once instead of leaving one that goes stale.
func TestHeartbeatStandbyAndRelease(t *testing.T) {
	db := &fakeDB{holder: "someone-else"}
	c := cfg()
	c.PollInterval = 10 * time.Millisecond // a beat is due every 10 ms
	var logged syncLog
	m := metrics.New()
	s := New(c, db, nil, slog.New(slog.NewJSONHandler(&logged, nil)), m)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	eventually(t, "standby", func() bool { return gaugeValueOf(t, m, "iu_runner_heartbeat_standby") == 1 })
	eventually(t, "several held beats", func() bool {
		return strings.Count(logged.String(), `"holder_instance":"someone-else"`) == 1 && db.runCount() > 5
	})
	if n := db.beats.Load(); n != 0 {
		t.Fatalf("a standby beat the row %d times", n)
	}
	if n := strings.Count(logged.String(), "another live runner holds"); n != 1 {
		t.Fatalf("the standby must be said once at WARN, said %d times:\n%s", n, logged.String())
	}
	db.mu.Lock()
	db.holder = ""
	db.mu.Unlock()
	eventually(t, "holding", func() bool { return gaugeValueOf(t, m, "iu_runner_heartbeat_standby") == 0 && db.beats.Load() > 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if len(db.released) != 1 || db.released[0] != s.instance {
		t.Fatalf("the stopping runner must hand its row back once: released %v, instance %s", db.released, s.instance)
	}
	if !strings.Contains(logged.String(), "this runner holds its heartbeat row now") {
		t.Fatalf("leaving standby must be said:\n%s", logged.String())
	}
}

// syncLog is a log sink the loop goroutine writes and the test reads.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *syncLog) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// gaugeValueOf is the value of an unlabelled gauge (-1 when it is not exported).
func gaugeValueOf(t *testing.T, m *metrics.Metrics, name string) float64 {
	t.Helper()
	fams, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}
