package tick

import (
	"context"
	"encoding/json"
	"errors"
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
}

func (f *fakeDB) RunWorker(_ context.Context, w string, batch int) (store.WorkerRun, error) {
	f.calls++
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
	return store.WorkerRun{Worker: w, Claimed: int64(n), AttemptsWritten: int64(n), ByStatus: map[string]int64{"dry_run": int64(n)}}, nil
}
func (f *fakeDB) StaleCheck(context.Context) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
}
func (f *fakeDB) ReapLeases(context.Context) (json.RawMessage, error) {
	return json.RawMessage(`{}`), nil
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
