package service

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
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
	n := min(batch, f.backlog)
	f.backlog -= n
	return store.WorkerRun{Worker: w, Claimed: int64(n), AttemptsWritten: int64(n), ByStatus: map[string]int64{"dry_run": int64(n)}}, nil
}
func (f *fakeDB) StaleCheck(context.Context) (json.RawMessage, error) {
	f.stales.Add(1)
	return json.RawMessage(`{}`), nil
}
func (f *fakeDB) ReapLeases(context.Context) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}
func (f *fakeDB) Heartbeat(context.Context, string, string, map[string]any) (json.RawMessage, error) {
	f.beats.Add(1)
	return json.RawMessage(`{}`), nil
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
	if db.beats.Load() < 1 || db.stales.Load() < 1 {
		t.Fatalf("no heartbeat/stale-check: %d %d", db.beats.Load(), db.stales.Load())
	}
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
