package jobqueue

import (
	"encoding/json"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
	"github.com/iu-core/event-worker/internal/store"
	"github.com/iu-core/event-worker/internal/tick"
)

// The runner prunes on its reap cadence: a tick against the real store runs fn_job_prune
// right after the reaper and reports it under "pruned"; --skip-reap skips both.
func TestJobPrune_RunnerTickPrunesAfterReap(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	db.Exec(t, `INSERT INTO job_queue (job_kind, event_domain, status, finished_at)
	            SELECT 'k', 'iu', 'succeeded', now() - interval '2 days' FROM generate_series(1, 7)`)
	st := store.New(db.Pool)
	skipped, err := tick.Run(ctx(t), st, tick.Options{SkipStale: true, SkipReap: true})
	if err != nil || skipped.Pruned != nil {
		t.Fatalf("skip-reap tick: %+v %v", skipped, err)
	}
	s, err := tick.Run(ctx(t), st, tick.Options{SkipStale: true})
	if err != nil {
		t.Fatal(err)
	}
	var pruned struct{ Pruned int }
	if err := json.Unmarshal(s.Pruned, &pruned); err != nil || pruned.Pruned != 7 {
		t.Fatalf("tick summary pruned = %s (%v)", s.Pruned, err)
	}
	if n := count(t, db, `SELECT count(*) FROM job_queue`); n != 0 {
		t.Fatalf("left: %d", n)
	}
}
