package tick

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/store"
)

type fakeDB struct {
	backlog map[string]int
	gated   bool
	busy    bool
	fail    error
	calls   int
	order   []string            // the worker of every call, in order
	onRun   func(worker string) // called before each run
	house   int                 // stale-check and reaper calls
}

func (f *fakeDB) RunWorker(_ context.Context, w string, batch int) (store.WorkerRun, error) {
	f.calls++
	f.order = append(f.order, w)
	if f.onRun != nil {
		f.onRun(w)
	}
	if f.fail != nil {
		return store.WorkerRun{}, f.fail
	}
	if f.gated {
		return store.WorkerRun{Worker: w, Gated: true, Reason: "closed"}, nil
	}
	if f.busy {
		return store.WorkerRun{Worker: w, Busy: true}, nil
	}
	n := min(batch, f.backlog[w])
	f.backlog[w] -= n
	// As the SQL decides it: a run that found less than its batch exhausted its window.
	return store.WorkerRun{Worker: w, Claimed: int64(n), AttemptsWritten: int64(n), CaughtUp: n < batch,
		ByStatus: map[string]int64{"dry_run": int64(n)}}, nil
}
func (f *fakeDB) StaleCheck(context.Context) (store.StaleCheck, error) {
	f.house++
	return store.StaleCheck{Raw: json.RawMessage(`{}`)}, nil
}
func (f *fakeDB) ReapLeases(context.Context) (store.Reap, error) {
	f.house++
	return store.Reap{Raw: json.RawMessage(`{}`)}, nil
}

// Rule: full batches are followed by the next until one comes back short.
func TestDrainUntilShort(t *testing.T) {
	db := &fakeDB{backlog: map[string]int{"w": 1200}}
	s, err := Run(context.Background(), db, Options{Workers: []string{"w"}, Batch: 500})
	if err != nil || s.Claimed != 1200 || s.Workers[0].Runs != 3 || s.Workers[0].Stopped != StopCaughtUp {
		t.Fatalf("%+v %v", s, err)
	}
	// an exact multiple needs one more (empty) run to know it is caught up
	db = &fakeDB{backlog: map[string]int{"w": 1000}}
	s, _ = Run(context.Background(), db, Options{Workers: []string{"w"}, Batch: 500})
	if s.Workers[0].Runs != 3 {
		t.Fatalf("runs %d", s.Workers[0].Runs)
	}
}

// Rule: gated and busy stop a worker at once and are success.
func TestGatedAndBusyAreSuccess(t *testing.T) {
	for _, db := range []*fakeDB{{gated: true}, {busy: true}} {
		s, err := Run(context.Background(), db, Options{Workers: []string{"w"}, Batch: 500})
		if err != nil || !s.OK || db.calls != 1 {
			t.Fatalf("%+v %v calls=%d", s, err, db.calls)
		}
	}
}

// Rule: the batch and time budgets bound a tick.
func TestBudget(t *testing.T) {
	db := &fakeDB{backlog: map[string]int{"w": 10000}}
	s, _ := Run(context.Background(), db, Options{Workers: []string{"w"}, Batch: 100, MaxBatches: 3})
	if s.Workers[0].Runs != 3 || s.Workers[0].Stopped != StopBudget {
		t.Fatalf("%+v", s.Workers[0])
	}
	db = &fakeDB{backlog: map[string]int{"w": 10000}}
	s, _ = Run(context.Background(), db, Options{Workers: []string{"w"}, Batch: 100, Budget: time.Nanosecond})
	if s.Workers[0].Runs != 1 || s.Workers[0].Stopped != StopBudget {
		t.Fatalf("%+v", s.Workers[0])
	}
}

// Rule: a failed call is an error and the summary says so.
func TestFailure(t *testing.T) {
	db := &fakeDB{fail: errors.New("boom")}
	s, err := Run(context.Background(), db, Options{Workers: []string{"w"}, Batch: 1})
	if err == nil || s.OK || len(s.Errors) != 1 {
		t.Fatalf("%+v %v", s, err)
	}
}

// Rule (fairness): with several workers, one batch of each is taken in turn. Worker b,
// with 50 events, is served right after a's first batch, while a still has a backlog of
// thousands; a's backlog never starves b, within a tick or under a budget.
func TestRoundRobinServesEveryWorker(t *testing.T) {
	db := &fakeDB{backlog: map[string]int{"a": 10000, "b": 50}}
	var aLeftWhenBServed int
	db.onRun = func(w string) {
		if w == "b" && aLeftWhenBServed == 0 {
			aLeftWhenBServed = db.backlog["a"]
		}
	}
	s, err := Run(context.Background(), db, Options{Workers: []string{"a", "b"}, Batch: 100})
	if err != nil || !s.OK {
		t.Fatalf("%+v %v", s, err)
	}
	if len(db.order) < 2 || db.order[0] != "a" || db.order[1] != "b" {
		t.Fatalf("call order starts %v, want a then b at once", db.order[:min(len(db.order), 5)])
	}
	if aLeftWhenBServed < 9000 {
		t.Fatalf("b was served when a had %d left: a's backlog went first", aLeftWhenBServed)
	}
	if s.Workers[0].Claimed != 10000 || s.Workers[1].Claimed != 50 || s.Workers[1].Runs != 1 ||
		s.Workers[0].Stopped != StopCaughtUp || s.Workers[1].Stopped != StopCaughtUp {
		t.Fatalf("%+v", s.Workers)
	}

	// under a batch budget, b is caught up although a used its whole budget
	db = &fakeDB{backlog: map[string]int{"a": 10000, "b": 250}}
	s, _ = Run(context.Background(), db, Options{Workers: []string{"a", "b"}, Batch: 100, MaxBatches: 3})
	if s.Workers[0].Runs != 3 || s.Workers[0].Stopped != StopBudget || s.Workers[1].Claimed != 250 || s.Workers[1].Stopped != StopCaughtUp {
		t.Fatalf("%+v", s.Workers)
	}
	if got := fmt.Sprint(db.order); got != "[a b a b a b]" {
		t.Fatalf("order %s, want alternating", got)
	}

	// under a time budget spent during a's first batch, b still gets its turn
	db = &fakeDB{backlog: map[string]int{"a": 10000, "b": 10000}}
	s, _ = Run(context.Background(), db, Options{Workers: []string{"a", "b"}, Batch: 100, Budget: time.Nanosecond})
	if s.Workers[0].Runs != 1 || s.Workers[1].Runs != 1 || s.Workers[1].Stopped != StopBudget {
		t.Fatalf("%+v", s.Workers)
	}
}

// Rule: a gated, busy or failed worker drops out of the rotation; the others go on.
func TestRoundRobinSkipsStoppedWorkers(t *testing.T) {
	db := &fakeDB{backlog: map[string]int{"a": 1000, "b": 0}}
	s, _ := Run(context.Background(), db, Options{Workers: []string{"a", "b"}, Batch: 100})
	if s.Workers[0].Runs != 11 || s.Workers[1].Runs != 1 {
		t.Fatalf("%+v", s.Workers)
	}
}

// Rule (SIGTERM during tick): the stop signal ends the tick between batches; the call in
// flight completes, no new batch starts, the housekeeping calls are skipped, and the
// tick is not a failure (interrupted, no error).
func TestStopEndsTickBetweenBatches(t *testing.T) {
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := &fakeDB{backlog: map[string]int{"a": 10000, "b": 10000}}
	db.onRun = func(string) { cancel() } // the signal arrives during the first call
	s, err := Run(context.Background(), db, Options{Workers: []string{"a", "b"}, Batch: 100, Stop: stop})
	if err != nil || !s.OK || !s.Interrupted {
		t.Fatalf("%+v %v", s, err)
	}
	if db.calls != 1 || s.Claimed != 100 || s.Workers[0].Runs != 1 || s.Workers[1].Stopped != StopHalted {
		t.Fatalf("calls %d, %+v", db.calls, s.Workers)
	}
	if db.house != 0 || s.StaleCheck != nil || s.Reaper != nil {
		t.Fatalf("housekeeping ran after the stop signal: %d calls", db.house)
	}
}

// Rule: with a budget, the worker runs' context ends one call timeout after the budget,
// so a hung call cannot hold the tick forever.
func TestBudgetBoundsTheWorkerContext(t *testing.T) {
	var dl time.Time
	var ok bool
	db := &ctxDB{fakeDB: fakeDB{backlog: map[string]int{"a": 0}}, seen: func(ctx context.Context) { dl, ok = ctx.Deadline() }}
	start := time.Now()
	if _, err := Run(context.Background(), db, Options{Workers: []string{"a"}, Batch: 1, Budget: time.Second, CallTimeout: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if !ok || dl.Sub(start) < 3*time.Second-100*time.Millisecond || dl.Sub(start) > 3*time.Second+time.Second {
		t.Fatalf("worker context deadline %v after start (ok=%v), want budget + call timeout = 3s", dl.Sub(start), ok)
	}
}

type ctxDB struct {
	fakeDB
	seen func(context.Context)
}

func (c *ctxDB) RunWorker(ctx context.Context, w string, batch int) (store.WorkerRun, error) {
	c.seen(ctx)
	return c.fakeDB.RunWorker(ctx, w, batch)
}
