package routeworker

import (
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// An idle run is read-only: with nothing to claim and no window open, fn_iu_route_worker_run
// writes no new version of the cursor row (its xmin stays), takes no row lock, and assigns
// the calling transaction no transaction id at all (so it writes no WAL and its commit needs
// no flush) — while a beat is not due. The run still reports idle: true and caught_up.
// Then one event arrives: the next run is not idle and moves the cursor.
func TestIdle_RunWritesNothing(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	ctx := pgtest.Ctx(t)
	emit(t, db.Pool, "iu", typDry, 3)
	requireCounts(t, run(t, db.Pool, b.worker, 100), map[string]int{"claimed": 3}) // beats too

	var xmin0, hbXmin0 string
	db.QueryRow(t, `SELECT xmin::text FROM iu_route_worker_cursor WHERE worker_name = $1`, []any{b.worker}, &xmin0)
	db.QueryRow(t, `SELECT xmin::text FROM queue_heartbeat WHERE executor_id = $1`, []any{b.worker}, &hbXmin0)

	conn := db.Conn(t)
	for i := range 5 {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m := run(t, tx, b.worker, 100)
		var xid *string
		if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id_if_assigned()::text`).Scan(&xid); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if m["idle"] != true || m["caught_up"] != true || m["claimed"] != float64(0) {
			t.Fatalf("idle run %d: want idle, caught up, nothing claimed; got %v", i, m)
		}
		if xid != nil {
			t.Fatalf("idle run %d assigned transaction id %s: it wrote something", i, *xid)
		}
	}
	var xmin1, hbXmin1 string
	db.QueryRow(t, `SELECT xmin::text FROM iu_route_worker_cursor WHERE worker_name = $1`, []any{b.worker}, &xmin1)
	db.QueryRow(t, `SELECT xmin::text FROM queue_heartbeat WHERE executor_id = $1`, []any{b.worker}, &hbXmin1)
	if xmin1 != xmin0 || hbXmin1 != hbXmin0 {
		t.Fatalf("idle runs wrote row versions: cursor xmin %s -> %s, heartbeat xmin %s -> %s", xmin0, xmin1, hbXmin0, hbXmin1)
	}

	emit(t, db.Pool, "iu", typDry, 1)
	m := run(t, db.Pool, b.worker, 100)
	if m["idle"] != false {
		t.Fatalf("a run that claims is not idle: %v", m)
	}
	requireCounts(t, m, map[string]int{"claimed": 1, "dry_run": 1})
	db.QueryRow(t, `SELECT xmin::text FROM iu_route_worker_cursor WHERE worker_name = $1`, []any{b.worker}, &xmin1)
	if xmin1 == xmin0 {
		t.Fatal("a run that claimed did not move the cursor")
	}
	requireExactlyOnce(t, db, b.worker)
}

// An idle worker is not a silent one: its runs write no cursor, but they still beat when a
// beat is due, so fn_queue_stale_check and v_queue_health see it fresh, and the cursor row
// of v_queue_health shows it as seen (last_seen_at), not never_run. A worker whose runs
// stop is still found stale once its threshold passes.
func TestIdle_WorkerStaysFreshWhileItRuns(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	run(t, db.Pool, b.worker, 100) // the first run beats; it claims nothing (empty domain)

	// Time passes: the last beat is 250 s old (threshold 300 s, floor 60 s), runs go on idle.
	db.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now() - interval '250 seconds' WHERE executor_id = $1`, b.worker)
	m := run(t, db.Pool, b.worker, 100)
	if m["idle"] != true {
		t.Fatalf("want an idle run, got %v", m)
	}
	var hint, cursorHint string
	var age int
	db.QueryRow(t, `SELECT status_hint, age_seconds FROM v_queue_health WHERE source = 'heartbeat' AND subject = $1`,
		[]any{b.worker}, &hint, &age)
	db.QueryRow(t, `SELECT status_hint FROM v_queue_health WHERE source = 'cursor' AND subject = $1`, []any{b.worker}, &cursorHint)
	if hint != "fresh" || age > 5 || cursorHint == "never_run" {
		t.Fatalf("an idle but running worker must read fresh and seen: heartbeat %s (age %d s), cursor %s", hint, age, cursorHint)
	}
	var stale int
	db.QueryRow(t, `SELECT (fn_queue_stale_check()->>'stale')::int`, nil, &stale)
	if stale != 0 {
		t.Fatalf("the stale-check found %d stale executors while the worker runs idle", stale)
	}

	// The runs stop: past the threshold the same worker is stale.
	db.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now() - interval '400 seconds' WHERE executor_id = $1`, b.worker)
	db.QueryRow(t, `SELECT (fn_queue_stale_check()->>'stale')::int`, nil, &stale)
	if stale != 1 {
		t.Fatalf("a worker silent for 400 s (threshold 300 s) must be stale, got %d", stale)
	}
}
