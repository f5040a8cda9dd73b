package routeworker

import (
	"fmt"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// The page has two statements: the INSERT straight from the claim, taken when no route of
// the worker's domain decides deliver (the package as shipped), and the page materialized
// once and read by the INSERT, the counts and the deliver list, taken when one does. The
// default test routes include a live one (r_live), so most tests here run the second; these
// run both on the same events and hold them to one answer.

// pageDomains makes two domains with the same routes for the types the tests emit (dry:
// dry_run, off: disabled, none: no route; route keys <domain>.<type>): "fa" has no route that delivers, so its worker
// pages through the INSERT straight from the claim; "ma" also has a live route for a type
// nobody emits, so its worker pages through the materialized statement. Workers "wfa" and
// "wma" consume them.
func pageDomains(t *testing.T, db *pgtest.DB) {
	t.Helper()
	db.Exec(t, `
		INSERT INTO event_type_registry (event_domain, event_type) VALUES
			('fa', 'dry'), ('fa', 'off'), ('fa', 'none'), ('ma', 'dry'), ('ma', 'off'), ('ma', 'none'), ('ma', 'live');
		INSERT INTO iu_outbound_route (event_domain, event_type, event_stream, route_key, enabled, dry_run) VALUES
			('fa', 'dry', 's', 'fa.dry', true, true), ('fa', 'off', 's', 'fa.off', false, true),
			('ma', 'dry', 's', 'ma.dry', true, true), ('ma', 'off', 's', 'ma.off', false, true),
			('ma', 'live', 's', 'ma.live', true, false);`)
	db.Exec(t, `SELECT fn_iu_route_worker_register('wfa', 'fa'), fn_iu_route_worker_register('wma', 'ma')`)
}

// emitBoth writes the same events into both domains, in one transaction per domain.
func emitBoth(t *testing.T, q querier, typ string, n int) {
	t.Helper()
	emit(t, q, "fa", typ, n)
	emit(t, q, "ma", typ, n)
}

// Rule: the page written straight from the claim writes what the materialized page writes:
// the same attempt per event (status, route), the same counts in every run's summary, the
// same position after every run, the last routed event's created_at on the cursor (the
// keyset a rolled-back first generation resumes from), the same running audit counts, and
// it never falls back. Late commits (branch a of the claim) and pages that end inside a
// transaction are part of it.
func TestPage_StraightFromTheClaimWritesWhatTheMaterializedPageWrites(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	pageDomains(t, db)
	ctx := pgtest.Ctx(t)

	late := db.Conn(t)
	tx, err := late.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)     //nolint:errcheck
	emitBoth(t, tx, "dry", 23) // committed later: a late commit for both workers
	for _, typ := range []string{"dry", "off", "none", "dry", "none"} {
		emitBoth(t, db.Pool, typ, 17)
	}
	type runPair struct{ fa, ma map[string]any }
	var runs []runPair
	step := func(limit int) {
		t.Helper()
		p := runPair{run(t, db.Pool, "wfa", limit), run(t, db.Pool, "wma", limit)}
		for _, k := range []string{"claimed", "attempts_written", "dry_run", "disabled", "skipped", "failed", "already_attempted", "caught_up", "window_open", "fallback"} {
			if fmt.Sprint(p.fa[k]) != fmt.Sprint(p.ma[k]) {
				t.Fatalf("run %d (batch %d): %s is %v straight from the claim, %v materialized\n%v\n%v", len(runs), limit, k, p.fa[k], p.ma[k], p.fa, p.ma)
			}
		}
		if p.fa["fallback"] != false {
			t.Fatalf("the page straight from the claim fell back: %v", p.fa)
		}
		runs = append(runs, p)
	}
	for _, limit := range []int{7, 7, 30, 1, 50} {
		step(limit)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	emitBoth(t, db.Pool, "off", 9)
	for _, limit := range []int{5, 11, 100, 100} {
		step(limit)
	}
	if runs[len(runs)-1].fa["caught_up"] != true {
		t.Fatalf("not caught up: %v", runs[len(runs)-1].fa)
	}

	// The same attempt for the n-th event of each domain, in claim order.
	attempts := func(domain, worker string) string {
		var s string
		db.QueryRow(t, `
			SELECT string_agg(coalesce(a.status, '-') || '/' || coalesce(split_part(a.route_key, '.', 2), '-'), ',' ORDER BY o.txid, o.id)
			  FROM event_outbox o
			  LEFT JOIN iu_route_attempt a ON a.event_ref = o.id AND a.worker_name = $2
			 WHERE o.event_domain = $1`, []any{domain, worker}, &s)
		return s
	}
	if fa, ma := attempts("fa", "wfa"), attempts("ma", "wma"); fa != ma {
		t.Fatalf("attempts differ:\nstraight from the claim %s\nmaterialized           %s", fa, ma)
	}
	requireExactlyOnce(t, db, "wfa")
	requireExactlyOnce(t, db, "wma")

	// The cursor's last_created_at is the created_at of the last event routed.
	for _, w := range []struct{ worker, domain string }{{"wfa", "fa"}, {"wma", "ma"}} {
		var ok bool
		db.QueryRow(t, `
			SELECT c.last_created_at IS NOT NULL
			       AND c.last_created_at = (SELECT o.created_at FROM event_outbox o WHERE o.id = c.last_event_id)
			       AND c.last_event_id = (SELECT o.id FROM event_outbox o WHERE o.event_domain = $2 ORDER BY o.txid DESC, o.id DESC LIMIT 1)
			  FROM iu_route_worker_cursor c WHERE c.worker_name = $1`, []any{w.worker, w.domain}, &ok)
		if !ok {
			t.Fatalf("%s: the cursor's last_event_id/last_created_at are not the last routed event's", w.worker)
		}
	}
	// The running audit counts agree with the rows, and between the two workers.
	var tally string
	db.QueryRow(t, `
		SELECT string_agg(t.worker_name || ':' || t.status || '=' || t.attempts, ',' ORDER BY t.worker_name, t.status)
		  FROM iu_route_attempt_tally t
		 WHERE t.worker_name IN ('wfa', 'wma')
		   AND t.attempts = (SELECT count(*) FROM iu_route_attempt a WHERE a.worker_name = t.worker_name AND a.status = t.status)`, nil, &tally)
	want := "wfa:disabled=26,wfa:dry_run=57,wfa:skipped=34,wma:disabled=26,wma:dry_run=57,wma:skipped=34"
	if tally != want {
		t.Fatalf("tally (rows that agree with the attempts): %s, want %s", tally, want)
	}
}

// Rule: the page written straight from the claim never skips an event it cannot write. A
// route that decides deliver (turned so after the run asked whether one does) makes the
// statement fail, writing nothing, so the run redoes the page event by event, which hands
// the event to the delivery seam. Proved on the statement itself: the page holds a live
// event and the caller said no route delivers.
func TestPage_ADeliverDecisionFailsTheStatementAndWritesNothing(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	emit(t, db.Pool, "iu", typDry, 3)
	emit(t, db.Pool, "iu", typLive, 1)
	emit(t, db.Pool, "iu", typNone, 2)
	_, err := db.Pool.Exec(pgtest.Ctx(t), `
		SELECT iu_core.fn_iu_route_worker_decide_page(iu_core.fn_iu_route_run_tally_zero(), 'w', 'iu',
		           ROW('1:1:'::pg_snapshot, pg_current_snapshot(), NULL, NULL)::iu_core.iu_route_window, 100, false, false)`)
	pgtest.RequireSQLState(t, err, "23514")
	if n := scalar(t, db, `SELECT count(*) FROM iu_route_attempt`); n != 0 {
		t.Fatalf("the failed page statement left %d attempts", n)
	}
	// The run itself asks whether a route delivers, and routes the live event to the seam.
	sum := runUntilCaughtUp(t, db.Pool, b.worker, 100)
	requireCounts(t, map[string]any{"claimed": float64(sum["claimed"]), "dry_run": float64(sum["dry_run"]),
		"failed": float64(sum["failed"]), "skipped": float64(sum["skipped"]), "fallback_runs": float64(sum["fallback_runs"])},
		map[string]int{"claimed": 6, "dry_run": 3, "failed": 1, "skipped": 2, "fallback_runs": 0})
}

// Rule: a lock id the probe read that is no longer the cursor's (the worker removed and
// registered again in between) never lets a run route beside the run that holds the
// worker's real lock: the full pass checks the id it locked against the cursor it read,
// and answers busy when the real lock is held; with the real lock free it takes it and
// routes.
func TestPass_AStaleLockIdNeverRoutesBesideTheLockHolder(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	emit(t, db.Pool, "iu", typDry, 5)
	var lockID int
	db.QueryRow(t, `SELECT lock_id FROM iu_route_worker_cursor WHERE worker_name = $1`, []any{b.worker}, &lockID)
	holder := db.Conn(t)
	ctx := pgtest.Ctx(t)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(iu_core.fn_iu_route_worker_lock_class(), $1)`, lockID); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	db.QueryRow(t, `SELECT iu_core.fn_iu_route_worker_pass($1, 100, $2)`, []any{b.worker, lockID + 1000}, &m)
	if m["busy"] != true || num(t, m, "claimed") != 0 {
		t.Fatalf("a stale lock id routed beside the lock holder: %v", m)
	}
	if n := scalar(t, db, `SELECT count(*) FROM iu_route_attempt`); n != 0 {
		t.Fatalf("%d attempts written beside the lock holder", n)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	db.QueryRow(t, `SELECT iu_core.fn_iu_route_worker_pass($1, 100, $2)`, []any{b.worker, lockID + 1000}, &m)
	requireCounts(t, m, map[string]int{"claimed": 5, "dry_run": 5})
}

// Rule: fn_iu_route_worker_name_ok, the worker-name rule as a test for the hot path, accepts
// exactly the names fn_iu_route_worker_require_name accepts.
func TestName_TheTestIsTheRule(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	names := []any{nil, "", " ", "\t\n", "w", "a:b", ":", "worker-1", " w ", "ü", string(make([]byte, 0)),
		fmt.Sprintf("%0200d", 0), fmt.Sprintf("%0201d", 0), "é" + fmt.Sprintf("%0198d", 0), "é" + fmt.Sprintf("%0199d", 0)}
	for _, n := range names {
		var ok bool
		db.QueryRow(t, `SELECT iu_core.fn_iu_route_worker_name_ok($1)`, []any{n}, &ok)
		_, err := db.Pool.Exec(pgtest.Ctx(t), `SELECT iu_core.fn_iu_route_worker_require_name('t', $1)`, n)
		if ok != (err == nil) {
			t.Errorf("name %q: the test says %v, the rule says %v", n, ok, err)
		}
	}
}
