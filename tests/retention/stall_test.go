package retention

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule (issue 22, item 2): retention never blocks producers or workers. A drop takes its
// locks at once or gives up at once and tries again next run, so no insert waits more than
// 100 ms on retention or maintenance, even while a producer keeps long transactions open
// (which a drop must wait out) and retention runs every second. Measured on a cluster of
// the test's own: a producer inserting as fast as it can (one row per transaction), a
// producer whose transactions stay open 0.5–1.5 s, a worker routing every 20 ms,
// maintenance every 0.5 s and retention every second (partitions of 2,000 txids, kept 0
// days: each goes once it closed and was routed), for 12 s. A monitor samples pg_locks every
// 10 ms for lock waits of the producers and the worker; only retention and maintenance take
// locks they could wait for, so the longest wait it sees is theirs. (A run over the target
// is measured once more before it fails: `make test` shares two cores between packages,
// and a descheduled session stretches a wait the code bounds; the old code's waits of up to
// 2 s fail every run.)
func TestRetention_NeverStallsProducers(t *testing.T) {
	const w = 2000
	db := privateDB(t, w)
	keepForDays(t, db, "0", "0")
	for run := 1; run <= 2; run++ {
		longest := measureStalls(t, db)
		if longest <= 100*time.Millisecond || t.Failed() {
			return
		}
		if run == 1 {
			t.Logf("over the 100 ms target (%v): measuring once more", longest.Round(time.Millisecond))
			continue
		}
		t.Errorf("a producer or the worker waited %v on a lock in both runs: want at most 100 ms", longest.Round(time.Millisecond))
	}
}

// measureStalls runs the load of TestRetention_NeverStallsProducers once and returns the
// longest lock wait the monitor saw.
func measureStalls(t *testing.T, db *pgtest.DB) time.Duration {
	t.Helper()
	fast, long, worker, maint, ret := newSession(t, db), newSession(t, db), newSession(t, db), newSession(t, db), newSession(t, db)
	mon := &lockMonitor{interval: 10 * time.Millisecond,
		watched: func() []int32 { return []int32{fast.pid.Load(), long.pid.Load(), worker.pid.Load()} }}

	ctx, cancel := context.WithTimeout(pgtest.Ctx(t), 12*time.Second)
	defer cancel()
	var fastLat, longLat, workerLat latencies
	var mu sync.Mutex
	var errs []error
	fail := func(what string, err error) {
		if ctx.Err() != nil {
			return
		}
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
		t.Errorf("%s: %v", what, err)
		cancel()
	}
	var retRuns, retTimeouts, dropped, maintCalls, maintBehind int
	var wg sync.WaitGroup
	wg.Add(6)
	go func() { defer wg.Done(); mon.run(ctx, db.URL) }()
	go func() { // the fast producer
		defer wg.Done()
		for ctx.Err() == nil {
			t0 := time.Now()
			if _, err := fast.conn.Exec(ctx, insertEvent); err != nil {
				fail("fast producer", err)
				return
			}
			fastLat.add(time.Since(t0))
		}
	}()
	go func() { // the producer with long transactions
		defer wg.Done()
		for ctx.Err() == nil {
			tx, err := long.conn.Begin(ctx)
			if err != nil {
				fail("long producer", err)
				return
			}
			open := time.Duration(500+rand.IntN(1000)) * time.Millisecond
			for end := time.Now().Add(open); time.Now().Before(end) && ctx.Err() == nil; {
				t0 := time.Now()
				if _, err := tx.Exec(ctx, insertEvent); err != nil {
					fail("long producer", err)
					return
				}
				longLat.add(time.Since(t0))
				time.Sleep(100 * time.Millisecond)
			}
			if err := tx.Commit(context.Background()); err != nil {
				fail("long producer commit", err)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	go func() {
		defer wg.Done()
		every(ctx, 20*time.Millisecond, func(ctx context.Context) {
			t0 := time.Now()
			if _, err := worker.callDoc(ctx, `SELECT fn_iu_route_worker_run('w', 1000)`); err != nil {
				fail("worker", err)
			}
			workerLat.add(time.Since(t0))
		})
	}()
	go func() {
		defer wg.Done()
		every(ctx, 500*time.Millisecond, func(ctx context.Context) {
			m, err := maint.callDoc(ctx, `SELECT fn_iu_partition_maintain()`)
			if err != nil {
				fail("maintenance", err)
				return
			}
			maintCalls++
			if m["behind"] == true {
				maintBehind++
			}
		})
	}()
	go func() {
		defer wg.Done()
		every(ctx, time.Second, func(ctx context.Context) {
			m, err := ret.callDoc(ctx, `SELECT fn_iu_retention_run(false)`)
			if err != nil {
				fail("retention", err)
				return
			}
			retRuns++
			if m["lock_timeout"] == true {
				retTimeouts++
			}
			d, _ := m["dropped"].([]any)
			dropped += len(d)
		})
	}()
	wg.Wait()
	for _, s := range []*session{fast, long, worker, maint, ret} {
		s.close()
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	if mon.sampleErr != nil {
		t.Fatalf("lock monitor: %v", mon.sampleErr)
	}
	longest, behind, what := mon.result()
	var avgWait, maxWait float64
	db.QueryRow(t, `SELECT coalesce(avg(extract(epoch FROM dropped_at - closed_at)), 0), coalesce(max(extract(epoch FROM dropped_at - closed_at)), 0)
	                  FROM iu_retention_ledger WHERE table_name = 'event_outbox'`, nil, &avgWait, &maxWait)
	t.Logf("12 s; fast producer inserts: %s", fastLat.summary())
	t.Logf("long-transaction producer inserts: %s", longLat.summary())
	t.Logf("worker runs: %s", workerLat.summary())
	t.Logf("longest lock wait of a producer or the worker (pg_locks every 10 ms, %d samples): %v (%s, behind pids %v; retention %d, maintenance %d)",
		mon.samples, longest.Round(time.Millisecond), what, behind, ret.pid.Load(), maint.pid.Load())
	t.Logf("retention: %d runs, %d gave up on its locks (lock_timeout), %d partitions dropped; closed to dropped: avg %.2f s, max %.2f s; maintenance: %d calls (%d locked the parents: behind)",
		retRuns, retTimeouts, dropped, avgWait, maxWait, maintCalls, maintBehind)
	if dropped == 0 {
		t.Errorf("retention dropped nothing in 12 s: the test's premise (partitions closing and going while producers write) is gone")
	}
	return longest
}
