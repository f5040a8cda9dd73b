package routeworker

import (
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/pgtest"
)

func attemptCount(t testing.TB, db *pgtest.DB, eventID string) int {
	t.Helper()
	return scalar(t, db, `SELECT count(*) FROM iu_route_attempt WHERE event_ref = $1`, eventID)
}

// Rule 5, late commits are never skipped: session A inserts an iu event with
// an early created_at and stays open; session B inserts and commits one; a run routes B's
// event at once while A is open; A commits; the next run routes A's event too. A keyset on
// (created_at, id) would skip A's row, because the cursor already moved past its created_at.
func TestCursor_LateCommitIsNeverSkipped(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	ctx := pgtest.Ctx(t)

	connA := db.Conn(t)
	txA, err := connA.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer txA.Rollback(ctx) //nolint:errcheck
	var idA string
	if err := txA.QueryRow(ctx, `INSERT INTO event_outbox (event_domain, event_type, event_stream, created_at)
	                              VALUES ('iu', 'dry', 's', now() - interval '1 hour') RETURNING id::text`).Scan(&idA); err != nil {
		t.Fatal(err)
	}

	idB := emit1(t, db.Conn(t), typDry) // session B, autocommit
	requireCounts(t, run(t, db.Pool, b.worker, 100), map[string]int{"claimed": 1, "dry_run": 1})
	if attemptCount(t, db, idB) != 1 {
		t.Fatal("B's committed event was not routed while A is open")
	}
	// B's created_at is later than A's: a created_at keyset is now past A's row.
	requireCounts(t, run(t, db.Pool, b.worker, 100), map[string]int{"claimed": 0})

	if err := txA.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	requireCounts(t, run(t, db.Pool, b.worker, 100), map[string]int{"claimed": 1, "dry_run": 1})
	if attemptCount(t, db, idA) != 1 {
		t.Fatal("A's late commit was skipped")
	}
	requireCounts(t, run(t, db.Pool, b.worker, 100), map[string]int{"claimed": 0})
	requireExactlyOnce(t, db, b.worker)
}

// Rule 5, a long transaction holds back only its own events: session C takes
// a transaction id and stays open; events committed meanwhile are routed at once (an xmin
// cut-off would stall them all behind C), the run summary and health name C's pid as what
// holds the window open, and when C finally commits an iu event it is routed too.
func TestCursor_LongTransactionHoldsBackOnlyItsOwnEvents(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	ctx := pgtest.Ctx(t)

	connC := db.Conn(t)
	pidC := backendPID(t, connC)
	txC, err := connC.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer txC.Rollback(ctx) //nolint:errcheck
	if _, err := txC.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil {
		t.Fatal(err)
	}

	for round := 1; round <= 3; round++ {
		ids := emit(t, db.Pool, "iu", typDry, 4)
		m := run(t, db.Pool, b.worker, 100)
		requireCounts(t, m, map[string]int{"claimed": 4, "dry_run": 4})
		for _, id := range ids {
			if attemptCount(t, db, id) != 1 {
				t.Fatalf("round %d: committed event %s not routed while C is open", round, id)
			}
		}
		if !containsInt(heldPIDs(t, m), pidC) || num(t, m, "held_open_count") < 1 {
			t.Fatalf("round %d: run summary does not name C (pid %d) as holding the window: %v", round, pidC, m["held_open_by"])
		}
	}
	var health map[string]any
	db.QueryRow(t, `SELECT fn_iu_route_worker_health('w')`, nil, &health)
	if !containsInt(heldPIDs(t, health), pidC) {
		t.Fatalf("health does not name C (pid %d): %v", pidC, health["held_open_by"])
	}
	if held := health["held_open_by"].([]any); len(held) > 0 {
		if age, ok := held[0].(map[string]any)["xact_age_seconds"].(float64); !ok || age < 0 {
			t.Fatalf("holder without an age: %v", held[0])
		}
	}

	var idC string
	if err := txC.QueryRow(ctx, `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 'dry', 's') RETURNING id::text`).Scan(&idC); err != nil {
		t.Fatal(err)
	}
	requireCounts(t, run(t, db.Pool, b.worker, 100), map[string]int{"claimed": 0})
	if err := txC.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	requireCounts(t, run(t, db.Pool, b.worker, 100), map[string]int{"claimed": 1})
	if attemptCount(t, db, idC) != 1 {
		t.Fatal("C's event was skipped")
	}
	m := run(t, db.Pool, b.worker, 100)
	if containsInt(heldPIDs(t, m), pidC) {
		t.Fatalf("C committed but is still reported as holding: %v", m["held_open_by"])
	}
	requireExactlyOnce(t, db, b.worker)
}

// Rule 5 under load: writers commit (and roll back) transactions of random sizes in random
// interleavings while the worker runs with small batches; at the end every committed iu
// event has exactly one attempt and no rolled-back event has any. Small sleeps only shuffle
// the interleaving; correctness never depends on them.
func TestCursor_ConcurrentWritersExactlyOnce(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	ctx := pgtest.Ctx(t)

	const writers = 4
	var wg sync.WaitGroup
	var done atomic.Bool
	errs := make(chan error, writers+1)
	for w := 0; w < writers; w++ {
		conn := db.Conn(t)
		wg.Add(1)
		go func(seed int64) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			for i := 0; i < 12; i++ {
				tx, err := conn.Begin(ctx)
				if err != nil {
					errs <- err
					return
				}
				n := 1 + rng.Intn(6)
				for j := 0; j < n; j++ {
					typ := []string{typDry, typOff, typNone, typDry}[rng.Intn(4)]
					if _, err := tx.Exec(ctx, `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', $1, 's')`, typ); err != nil {
						errs <- err
						return
					}
					time.Sleep(time.Duration(rng.Intn(3)) * time.Millisecond)
				}
				if rng.Intn(6) == 0 {
					err = tx.Rollback(ctx)
				} else {
					err = tx.Commit(ctx)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}(int64(w + 1))
	}
	runner := db.Conn(t)
	var rwg sync.WaitGroup
	rwg.Add(1)
	go func() {
		defer rwg.Done()
		for !done.Load() {
			var m map[string]any
			if err := runner.QueryRow(ctx, `SELECT fn_iu_route_worker_run('w', 3)`).Scan(&m); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	done.Store(true)
	rwg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	runUntilCaughtUp(t, db.Pool, b.worker, 3)
	if n := requireExactlyOnce(t, db, b.worker); n == 0 {
		t.Fatal("no events were written")
	}
	if n := scalar(t, db, `SELECT count(*) FROM iu_route_attempt`); n != scalar(t, db, `SELECT count(*) FROM event_outbox WHERE event_domain = 'iu'`) {
		t.Fatalf("attempt count %d differs from the event count", n)
	}
}

// Rule 7: one run per worker at a time. Session A runs the worker inside an
// open transaction (holding the cursor row); session B's run returns busy:true at once —
// under a 2 s lock_timeout/statement_timeout, so it provably did not wait — and after A
// commits every event has exactly one attempt: no duplicate, no gap.
func TestCursor_SecondRunIsBusyAndNeverWaits(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	ctx := pgtest.Ctx(t)
	emit(t, db.Pool, "iu", typDry, 7)

	connA := db.Conn(t)
	txA, err := connA.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer txA.Rollback(ctx) //nolint:errcheck
	requireCounts(t, run(t, txA, b.worker, 5), map[string]int{"claimed": 5})

	emit(t, db.Pool, "iu", typDry, 3) // arrives while A runs

	connB := db.Conn(t)
	if _, err := connB.Exec(ctx, `SET lock_timeout = '2s'; SET statement_timeout = '2s'`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	m := run(t, connB, b.worker, 100)
	if elapsed := time.Since(start); elapsed > 1500*time.Millisecond {
		t.Fatalf("the busy run took %v: it waited", elapsed)
	}
	if m["busy"] != true || m["gated"] != false {
		t.Fatalf("want busy:true, got %v", m)
	}
	requireCounts(t, m, map[string]int{"claimed": 0, "attempts_written": 0})
	if n := scalar(t, db, `SELECT count(*) FROM iu_route_attempt`); n != 0 {
		t.Fatalf("%d attempts visible before A commits", n)
	}

	if err := txA.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	sum := runUntilCaughtUp(t, connB, b.worker, 100)
	if sum["claimed"] != 5 || sum["attempts_written"] != 5 {
		t.Fatalf("after A: %v", sum)
	}
	if n := requireExactlyOnce(t, db, b.worker); n != 10 {
		t.Fatalf("%d events, want 10", n)
	}
}

// Rule 6 (cursor sanity): a cursor recorded in another cluster (system_identifier
// differs, or its snapshots lie ahead of this cluster's transaction ids) is refused with
// SQLSTATE IU002 and a HINT naming the fix; fn_iu_route_worker_reset_cursor re-anchors it
// and the re-scan writes no duplicates.
func TestCursor_ForeignClusterIsRefusedUntilReset(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	emit(t, db.Pool, "iu", typDry, 3)
	runUntilCaughtUp(t, db.Pool, b.worker, 100)

	for name, corrupt := range map[string]string{
		"other system_identifier":  `UPDATE iu_route_worker_cursor SET system_identifier = system_identifier + 1 WHERE worker_name = 'w'`,
		"snapshot from the future": `UPDATE iu_route_worker_cursor SET done_snapshot = '4000000000:4000000000:' WHERE worker_name = 'w'`,
	} {
		db.Exec(t, corrupt)
		emit(t, db.Pool, "iu", typDry, 2)
		_, err := runErr(t, db.Pool, b.worker, 100)
		e := pgtest.RequireSQLState(t, err, "IU002")
		if !strings.HasPrefix(e.Message, "fn_iu_route_worker_run: ") ||
			!strings.Contains(e.Hint, "SELECT fn_iu_route_worker_reset_cursor('w')") {
			t.Fatalf("%s: message %q hint %q", name, e.Message, e.Hint)
		}
		// Health says so instead of reporting a meaningless backlog.
		var h map[string]any
		db.QueryRow(t, `SELECT fn_iu_route_worker_health('w')`, nil, &h)
		if h["cursor_ok"] != false || h["backlog"] != nil || !strings.Contains(h["cursor_hint"].(string), "fn_iu_route_worker_reset_cursor('w')") {
			t.Fatalf("%s: health cursor_ok %v backlog %v hint %v", name, h["cursor_ok"], h["backlog"], h["cursor_hint"])
		}
		// Refused, not routed: nothing was written for the new events.
		if n := scalar(t, db, `SELECT count(*) FROM event_outbox e WHERE NOT EXISTS (SELECT 1 FROM iu_route_attempt a WHERE a.event_ref = e.id)`); n != 2 {
			t.Fatalf("%s: %d events unrouted, want 2", name, n)
		}

		var res map[string]any
		db.QueryRow(t, `SELECT fn_iu_route_worker_reset_cursor('w')`, nil, &res)
		var ok bool
		db.QueryRow(t, `SELECT system_identifier = (SELECT system_identifier FROM pg_control_system()) AND done_snapshot IS NULL
		                  FROM iu_route_worker_cursor WHERE worker_name = 'w'`, nil, &ok)
		if !ok {
			t.Fatalf("%s: reset did not re-anchor the cursor", name)
		}
		sum := runUntilCaughtUp(t, db.Pool, b.worker, 100)
		if sum["attempts_written"] != 2 {
			t.Fatalf("%s: after reset: %v (want only the 2 new events written)", name, sum)
		}
		requireExactlyOnce(t, db, b.worker)
	}
}

// The window keyset: many events from one transaction paged in small batches, with other
// transactions committing between pages, are each routed exactly once and in (txid, id)
// order within the big transaction.
func TestCursor_PagingInsideOneLargeTransaction(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	emit(t, db.Pool, "iu", typDry, 250)
	for i := 0; i < 30; i++ {
		m := run(t, db.Pool, b.worker, 7)
		if i%3 == 0 {
			emit(t, db.Pool, "iu", typNone, 2)
		}
		if m["caught_up"] == true {
			break
		}
	}
	runUntilCaughtUp(t, db.Pool, b.worker, 7)
	if n := requireExactlyOnce(t, db, b.worker); n < 250 {
		t.Fatalf("%d events", n)
	}
	// The big transaction was consumed in keyset order: every run's events come after the
	// previous run's (a run's attempts share its transaction's created_at).
	var ordered bool
	db.QueryRow(t, `
		SELECT bool_and(prev_max IS NULL OR prev_max < lo)
		  FROM (SELECT lo, lag(hi) OVER (ORDER BY at) AS prev_max
		          FROM (SELECT a.created_at AS at, min(e.id::text) AS lo, max(e.id::text) AS hi
		                  FROM iu_route_attempt a JOIN event_outbox e ON e.id = a.event_ref
		                 WHERE e.event_type = 'dry'
		                 GROUP BY a.created_at) runs) x`, nil, &ordered)
	if !ordered {
		t.Fatal("the pages of one transaction were not consumed in (txid, id) order")
	}
}
