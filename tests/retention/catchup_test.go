package retention

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule (issue 22, item 1): maintenance never loses the race with producers. After an
// interruption (a call terminated while it waited for its locks, then no maintenance while
// two producers insert as fast as they can, one row per transaction, until the partitions
// ran out and rows landed in the default partitions), maintenance catches up within two
// calls while the producers keep writing at full rate: new rows land in a regular partition
// again, and the default partitions are empty (they hold rows only until the next call).
// No row is lost. Partitions of 5,000 txids on a cluster of the test's own; maintenance
// every 200 ms once it resumes.
func TestPartitions_CatchUpUnderFullRateProducers(t *testing.T) {
	const w = 5000
	db := privateDB(t, w)
	p1, p2, maint, blocker, probe := newSession(t, db), newSession(t, db), newSession(t, db), newSession(t, db), newSession(t, db)
	ctx, cancel := context.WithTimeout(pgtest.Ctx(t), 90*time.Second)
	defer cancel()
	prodCtx, stopProducers := context.WithCancel(ctx)
	var lat, latCatch latencies
	var catching atomic.Bool
	var inserted sync.Map // producer -> rows committed
	var wg sync.WaitGroup
	for i, p := range []*session{p1, p2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			defer func() { inserted.Store(i, n) }()
			for prodCtx.Err() == nil {
				t0 := time.Now()
				if _, err := p.conn.Exec(prodCtx, insertEvent); err != nil {
					if prodCtx.Err() == nil {
						t.Errorf("producer %d: %v", i, err)
					}
					return
				}
				n++
				if catching.Load() {
					latCatch.add(time.Since(t0))
				} else {
					lat.add(time.Since(t0))
				}
			}
		}()
	}
	defaults := func() int {
		return scalar(t, db, `SELECT (SELECT count(*) FROM ONLY event_outbox_default) + (SELECT count(*) FROM ONLY iu_route_attempt_default)`)
	}
	call := func() map[string]any {
		t.Helper()
		m, err := maint.callDoc(ctx, `SELECT fn_iu_partition_maintain()`)
		if err != nil {
			t.Fatalf("maintenance: %v", err)
		}
		return m
	}

	// Steady state: maintenance keeps ahead.
	for i := 0; i < 5; i++ {
		call()
		time.Sleep(200 * time.Millisecond)
	}
	if n := defaults(); n != 0 {
		t.Fatalf("maintenance every 200 ms: %d rows reached the default partitions", n)
	}

	// The interruption: a reader holds iu_route_attempt_default, so maintenance cannot have
	// its locks; a call is terminated while it tries. Then no maintenance until the
	// producers ran past the last partition.
	btx, err := blocker.conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := btx.Exec(ctx, `LOCK TABLE iu_route_attempt_default IN ACCESS SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	burnTo := scalar(t, db, `SELECT (max(upper_txid::text::numeric) - pg_snapshot_xmax(pg_current_snapshot())::text::numeric)::int FROM iu_history_partition`)
	if burnTo > w+500 { // make the next call due (under two widths ahead), so it needs its locks
		c := db.Conn(t)
		if _, err := c.Exec(ctx, fmt.Sprintf(`DO $$ BEGIN FOR i IN 1..%d LOOP PERFORM pg_current_xact_id(); COMMIT; END LOOP; END $$`, burnTo-(w+500))); err != nil {
			t.Fatal(err)
		}
	}
	interrupted := make(chan error, 1)
	go func() { _, err := maint.callDoc(ctx, `SELECT fn_iu_partition_maintain()`); interrupted <- err }()
	time.Sleep(300 * time.Millisecond)
	var killed bool
	db.QueryRow(t, `SELECT pg_terminate_backend($1)`, []any{maint.pid.Load()}, &killed)
	if err := <-interrupted; !killed || err == nil {
		t.Fatalf("the maintenance call was not interrupted (terminated %v, its error %v)", killed, err)
	}
	deadline := time.Now().Add(45 * time.Second)
	for defaults() < 2000 {
		if time.Now().After(deadline) {
			t.Fatalf("the producers did not reach the default partitions within 45 s (%d rows there)", defaults())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := btx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	// Maintenance resumes, every 200 ms, the producers still at full rate.
	inDefault := defaults()
	resumed := time.Now()
	catching.Store(true)
	var caughtUp, drained int
	var caughtUpAfter, drainedAfter time.Duration
	var answers []map[string]any
	for k := 1; k <= 10 && (caughtUp == 0 || drained == 0); k++ {
		answers = append(answers, call())
		var where string
		if err := probe.conn.QueryRow(ctx, insertEvent+` RETURNING tableoid::regclass::text`).Scan(&where); err != nil {
			t.Fatal(err)
		}
		if caughtUp == 0 && where != "event_outbox_default" {
			caughtUp, caughtUpAfter = k, time.Since(resumed)
		}
		if drained == 0 && defaults() == 0 {
			drained, drainedAfter = k, time.Since(resumed)
		}
		time.Sleep(200 * time.Millisecond)
	}
	stopProducers()
	wg.Wait()
	total := 0
	inserted.Range(func(_, v any) bool { total += v.(int); return true })
	var rate float64
	db.QueryRow(t, `SELECT count(*) / greatest(extract(epoch FROM max(created_at) - min(created_at)), 0.001) FROM event_outbox`, nil, &rate)
	t.Logf("producers: %.0f rows (= txids) per second over the run; inserts before: %s; while maintenance caught up: %s", rate, lat.summary(), latCatch.summary())
	t.Logf("%d rows in the default partitions when maintenance resumed; caught up (new rows in a regular partition) after call %d (%v), default partitions empty after call %d (%v)",
		inDefault, caughtUp, caughtUpAfter.Round(time.Millisecond), drained, drainedAfter.Round(time.Millisecond))
	for i, a := range answers {
		// the whole answer: a failure under load must say why (which way the call took,
		// what it was refused, what it saw), not only the keys a passing run needs
		doc, _ := json.Marshal(a)
		t.Logf("call %d: %s", i+1, doc)
	}
	if caughtUp == 0 || caughtUp > 2 {
		t.Errorf("maintenance caught up after call %d, want within 2", caughtUp)
	}
	if drained == 0 || drained > 2 {
		t.Errorf("the default partitions were empty after call %d, want within 2 (they hold rows only transiently)", drained)
	}
	if n := scalar(t, db, `SELECT count(*) FROM event_outbox`); n < total {
		t.Errorf("the producers committed %d rows, the outbox holds %d", total, n)
	}
}
