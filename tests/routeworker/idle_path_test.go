package routeworker

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// probeQuiet asks the run's two idle questions (as the owner, the way fn_iu_route_worker_run
// asks them: the worker, then the outbox) whether a run would be answered by the idle path.
func probeQuiet(t testing.TB, q querier, worker string) bool {
	t.Helper()
	var quiet *bool
	if err := q.QueryRow(pgtest.Ctx(t), `
		SELECT p.quiet AND NOT EXISTS (SELECT 1 FROM iu_core.fn_iu_route_worker_idle_rows(p.event_domain, p.done_snapshot, pg_current_snapshot()))
		  FROM iu_core.fn_iu_route_worker_idle_probe($1, 100) p`, worker).Scan(&quiet); err != nil {
		t.Fatalf("idle probe: %v", err)
	}
	return quiet != nil && *quiet
}

// requireRefusedNotQuiet: the probe must not call worker quiet (what says why), and the run
// it then takes, the full pass, must refuse with IU002 (a position or rows from another
// cluster).
func requireRefusedNotQuiet(t testing.TB, db *pgtest.DB, worker, what string) {
	t.Helper()
	if probeQuiet(t, db.Pool, worker) {
		t.Fatalf("%s: the probe must not be quiet", what)
	}
	_, err := runErr(t, db.Pool, worker, 100)
	pgtest.RequireSQLState(t, err, "IU002")
}

// claimHasRows asks the claim itself whether a window opened now would claim anything.
func claimHasRows(t testing.TB, q querier, worker string) bool {
	t.Helper()
	var has bool
	if err := q.QueryRow(pgtest.Ctx(t), `
		SELECT EXISTS (SELECT 1 FROM iu_route_worker_cursor c,
		                      iu_core.fn_iu_route_worker_claim(c.event_domain, ROW(c.done_snapshot, pg_current_snapshot(), NULL, NULL)::iu_core.iu_route_window, 1)
		                WHERE c.worker_name = $1)`, worker).Scan(&has); err != nil {
		t.Fatalf("claim: %v", err)
	}
	return has
}

// caughtUpAndFresh routes everything and leaves the worker with a fresh beat, so the
// next run is a candidate for the idle path.
func caughtUpAndFresh(t *testing.T, db *pgtest.DB, worker string) {
	t.Helper()
	runUntilCaughtUp(t, db.Pool, worker, 100)
	db.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now(), status = 'ok', ticks_total = greatest(ticks_total, 1),
	                   last_beat_payload = '{}' WHERE executor_id = $1`, worker)
	if !probeQuiet(t, db.Pool, worker) {
		t.Fatal("a caught-up worker with a fresh beat must be quiet")
	}
}

// Rule: the idle path answers exactly as the full pass would. A caught-up worker's run is
// answered by the idle probe and one expression, and its summary is the full pass's idle
// summary, key for key and value for value (run_at aside).
func TestIdlePath_SummaryIsTheFullPassSummary(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	emit(t, db.Pool, "iu", typDry, 2)
	caughtUpAndFresh(t, db, b.worker)

	fast := run(t, db.Pool, b.worker, 100)
	var full map[string]any
	db.QueryRow(t, `SELECT iu_core.fn_iu_route_worker_pass($1, 100)`, []any{b.worker}, &full)
	delete(fast, "run_at")
	delete(full, "run_at")
	if len(fast) != len(full) {
		t.Fatalf("idle path keys %d, full pass keys %d:\n%v\n%v", len(fast), len(full), fast, full)
	}
	for k, v := range full {
		fj, _ := json.Marshal(fast[k])
		vj, _ := json.Marshal(v)
		if _, ok := fast[k]; !ok || string(fj) != string(vj) {
			t.Errorf("key %s: idle path %v, full pass %v", k, fast[k], v)
		}
	}
	if fast["idle"] != true || fast["caught_up"] != true {
		t.Fatalf("not an idle summary: %v", fast)
	}
}

// Rule: the idle path never hides work. Whatever the claim would return, whatever the full
// pass must refuse or beat for, makes the probe say "not quiet", so the run takes the full
// pass and gives the right answer: a committed event is claimed; an event of a transaction
// that was in progress when the position was stored (it committed later) is claimed; rows
// restored from another cluster and a cursor from another cluster are refused with IU002
// (at the first event or the first due beat: both are invisible to every window);
// a closed gate is reported gated; an open window is continued; a due beat is written; a
// caller whose transaction already wrote goes the full way.
func TestIdlePath_NeverQuieterThanTheClaim(t *testing.T) {
	t.Parallel()
	ctx := pgtest.Ctx(t)

	t.Run("committed event", func(t *testing.T) {
		t.Parallel()
		db, b := setup(t)
		caughtUpAndFresh(t, db, b.worker)
		emit1(t, db.Pool, typDry)
		if !claimHasRows(t, db.Pool, b.worker) || probeQuiet(t, db.Pool, b.worker) {
			t.Fatal("a committed event: the claim has it, the probe must not be quiet")
		}
		requireCounts(t, run(t, db.Pool, b.worker, 100), map[string]int{"claimed": 1})
	})

	t.Run("late commit of a transaction in the stored position", func(t *testing.T) {
		t.Parallel()
		db, b := setup(t)
		late := db.Conn(t)
		tx, err := late.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.Background()) //nolint:errcheck
		if _, err := tx.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil {
			t.Fatal(err)
		}
		emit1(t, db.Pool, typDry) // routed while the late transaction runs: it lands in done's in-progress list
		caughtUpAndFresh(t, db, b.worker)
		var inDone bool
		db.QueryRow(t, `SELECT EXISTS (SELECT 1 FROM iu_route_worker_cursor c, pg_snapshot_xip(c.done_snapshot) x
		                                 WHERE c.worker_name = $1)`, []any{b.worker}, &inDone)
		if !inDone {
			t.Fatal("setup: the stored position lists no transaction in progress")
		}
		id := emit1(t, tx, typDry)
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if !claimHasRows(t, db.Pool, b.worker) || probeQuiet(t, db.Pool, b.worker) {
			t.Fatal("a late commit: the claim has it, the probe must not be quiet")
		}
		requireCounts(t, run(t, db.Pool, b.worker, 100), map[string]int{"claimed": 1})
		if attemptCount(t, db, id) != 1 {
			t.Fatal("the late event was not routed")
		}
	})

	// The run asks the late-commit question only when a transaction the position lists has
	// completed since (while all still run, it has nothing to find): the question is asked
	// when one has, whichever it is. Here the younger of two commits a late event while the
	// older still runs (so "the oldest listed has completed" would not do).
	t.Run("late commit while an older transaction of the position still runs", func(t *testing.T) {
		t.Parallel()
		db, b := setup(t)
		var txs []pgx.Tx
		var xids []string
		for range 2 {
			tx, err := db.Conn(t).Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background()) //nolint:errcheck
			var xid string
			if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&xid); err != nil {
				t.Fatal(err)
			}
			txs, xids = append(txs, tx), append(xids, xid)
		}
		older, younger := txs[0], txs[1]
		emit1(t, db.Pool, typDry) // routed while both run: both land in done's in-progress list
		caughtUpAndFresh(t, db, b.worker)
		if n := scalar(t, db, `SELECT count(*) FROM iu_route_worker_cursor c, pg_snapshot_xip(c.done_snapshot) x
		                        WHERE c.worker_name = $1 AND x::text = ANY ($2::text[])`, b.worker, xids); n != 2 {
			t.Fatalf("setup: the stored position lists %d of the 2 transactions in progress", n)
		}
		if m := run(t, db.Pool, b.worker, 100); m["idle"] != true || num(t, m, "held_open_count") != 2 {
			t.Fatalf("both running: want an idle run held by both, got %v", m)
		}
		id := emit1(t, younger, typDry)
		if err := younger.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if !claimHasRows(t, db.Pool, b.worker) || probeQuiet(t, db.Pool, b.worker) {
			t.Fatal("a late commit: the claim has it, the probe must not be quiet")
		}
		requireCounts(t, run(t, db.Pool, b.worker, 100), map[string]int{"claimed": 1})
		if attemptCount(t, db, id) != 1 {
			t.Fatal("the late event was not routed while the older transaction runs")
		}
		if _, err := older.Exec(ctx, `SELECT 1`); err != nil {
			t.Fatalf("the older transaction must still be open: %v", err)
		}
	})

	// Rows restored from another cluster whose txids lie beyond this cluster's are invisible
	// to every window (nothing can be routed under them) and are the full pass's to refuse:
	// the idle path bounds its question by the statement's snapshot (so the partitions ahead
	// and the default one are pruned), and may read idle while there is nothing else to do,
	// as for a cursor from another cluster; the first event and the first due beat are
	// refused before anything is routed. A restored row below this cluster's next txid is
	// an ordinary new row to the idle path.
	t.Run("rows from another cluster", func(t *testing.T) {
		t.Parallel()
		db, b := setup(t)
		caughtUpAndFresh(t, db, b.worker)
		// A restored row: its txid comes from a cluster far ahead of this one (the test
		// session is a superuser, a member of the package, which may store any txid).
		db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream, txid) VALUES ('iu', 'dry', 's', '900000000')`)
		id := emit1(t, db.Pool, typDry)
		requireRefusedNotQuiet(t, db, b.worker, "foreign rows and an event to route")
		if attemptCount(t, db, id) != 0 {
			t.Fatal("an event was routed while foreign rows are in the outbox")
		}

		db2, b2 := setup(t)
		caughtUpAndFresh(t, db2, b2.worker)
		db2.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream, txid) VALUES ('iu', 'dry', 's', '900000000')`)
		db2.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now() - interval '1 hour' WHERE executor_id = $1`, b2.worker)
		_, err := runErr(t, db2.Pool, b2.worker, 100)
		pgtest.RequireSQLState(t, err, "IU002")
	})

	t.Run("cursor ahead of this cluster", func(t *testing.T) {
		t.Parallel()
		db, b := setup(t)
		caughtUpAndFresh(t, db, b.worker)
		db.Exec(t, `UPDATE iu_route_worker_cursor SET done_snapshot = '4000000000:4000000000:' WHERE worker_name = $1`, b.worker)
		requireRefusedNotQuiet(t, db, b.worker, "a cursor ahead of this cluster")
	})

	// The recorded system_identifier is checked by the full pass only (it costs a read of
	// the control file): a cursor from another cluster may read idle while there is nothing
	// to do, but the first event and the first due beat are refused before anything is
	// routed.
	t.Run("cursor from another cluster", func(t *testing.T) {
		t.Parallel()
		db, b := setup(t)
		caughtUpAndFresh(t, db, b.worker)
		db.Exec(t, `UPDATE iu_route_worker_cursor SET system_identifier = system_identifier + 1 WHERE worker_name = $1`, b.worker)
		id := emit1(t, db.Pool, typDry)
		requireRefusedNotQuiet(t, db, b.worker, "a foreign cursor with an event to route")
		if attemptCount(t, db, id) != 0 {
			t.Fatal("an event was routed under a foreign cursor")
		}

		db2, b2 := setup(t)
		caughtUpAndFresh(t, db2, b2.worker)
		db2.Exec(t, `UPDATE iu_route_worker_cursor SET system_identifier = system_identifier + 1 WHERE worker_name = $1`, b2.worker)
		db2.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now() - interval '1 hour' WHERE executor_id = $1`, b2.worker)
		_, err := runErr(t, db2.Pool, b2.worker, 100)
		pgtest.RequireSQLState(t, err, "IU002")
	})

	// The probe reads both gates in one statement and applies the gate rule to each row it
	// finds: a gate is open only when its row is there and reads exactly 'true', so a value
	// that is not 'true' and a missing row both close it, each gate on its own.
	t.Run("closed gate", func(t *testing.T) {
		t.Parallel()
		db, b := setup(t)
		caughtUpAndFresh(t, db, b.worker)
		for _, key := range []string{"iu_core.routes_enabled", "iu_core.route_worker_enabled"} {
			db.Exec(t, `UPDATE dot_config SET value = 'TRUE' WHERE key = $1`, key)
			if probeQuiet(t, db.Pool, b.worker) {
				t.Fatalf("gate %s reads 'TRUE' (closed): the probe must not be quiet", key)
			}
			if m := run(t, db.Pool, b.worker, 100); m["gated"] != true {
				t.Fatalf("gate %s closed: want a gated run, got %v", key, m)
			}
			db.Exec(t, `UPDATE dot_config SET value = 'true' WHERE key = $1`, key)
		}
		for _, key := range []string{"iu_core.routes_enabled", "iu_core.route_worker_enabled"} {
			caughtUpAndFresh(t, db, b.worker)
			db.Exec(t, `DELETE FROM dot_config WHERE key = $1`, key)
			if probeQuiet(t, db.Pool, b.worker) {
				t.Fatalf("gate %s missing (closed): the probe must not be quiet", key)
			}
			if m := run(t, db.Pool, b.worker, 100); m["gated"] != true {
				t.Fatalf("gate %s missing: want a gated run, got %v", key, m)
			}
			db.Exec(t, `INSERT INTO dot_config (key, value) VALUES ($1, 'true')`, key)
		}
	})

	t.Run("open window", func(t *testing.T) {
		t.Parallel()
		db, b := setup(t)
		emit(t, db.Pool, "iu", typDry, 3)
		requireCounts(t, run(t, db.Pool, b.worker, 2), map[string]int{"claimed": 2}) // the window stays open
		if probeQuiet(t, db.Pool, b.worker) {
			t.Fatal("an open window: the probe must not be quiet")
		}
		requireCounts(t, run(t, db.Pool, b.worker, 2), map[string]int{"claimed": 1})
	})

	t.Run("beat due", func(t *testing.T) {
		t.Parallel()
		db, b := setup(t)
		caughtUpAndFresh(t, db, b.worker)
		db.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now() - interval '1 hour' WHERE executor_id = $1`, b.worker)
		if probeQuiet(t, db.Pool, b.worker) {
			t.Fatal("a due beat: the probe must not be quiet")
		}
		run(t, db.Pool, b.worker, 100)
		var age float64
		db.QueryRow(t, `SELECT extract(epoch FROM now() - last_beat_at) FROM queue_heartbeat WHERE executor_id = $1`, []any{b.worker}, &age)
		if age > 5 {
			t.Fatalf("the due beat was not written (age %.0f s)", age)
		}
	})

	t.Run("caller's transaction already wrote", func(t *testing.T) {
		t.Parallel()
		db, b := setup(t)
		caughtUpAndFresh(t, db, b.worker)
		tx, err := db.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.Background()) //nolint:errcheck
		id := emit1(t, tx, typDry)
		if probeQuiet(t, tx, b.worker) {
			t.Fatal("a caller with its own rows: the probe must not be quiet")
		}
		// Its own rows wait for its commit (the window lists the caller as in progress).
		requireCounts(t, run(t, tx, b.worker, 100), map[string]int{"claimed": 0})
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		requireCounts(t, run(t, db.Pool, b.worker, 100), map[string]int{"claimed": 1})
		if attemptCount(t, db, id) != 1 {
			t.Fatal("the caller's event was not routed after its commit")
		}
	})
}

// manyPastPartitions gives db's history n closed partitions of 1,000 transaction ids below
// the current one (pgtest.PastPartitionsSQL) and returns how many outbox partitions it has.
func manyPastPartitions(t *testing.T, db *pgtest.DB, n int) int {
	t.Helper()
	for _, stmt := range pgtest.PastPartitionsSQL(n) {
		db.Exec(t, stmt)
	}
	return scalar(t, db, `SELECT count(*) FROM iu_history_partition WHERE table_name = 'event_outbox'`)
}

// Rule: an idle run's cost does not grow with the history kept. Every history partition
// is a relation a generic plan may have to start a scan of; the idle path's outbox question
// bounds txid by values known when its statement starts (the stored position's xmin and
// xmax, the current xmax), so every partition that lies wholly below the position is
// pruned before any scan is built. With 30+ partitions, the prepared question (as the run
// executes it) starts no scan on a partition below the stored done_snapshot's xmin.
// Not parallel: transactions of concurrent tests would hold the cluster's xmin back, and
// with it the position's (a window spans the partitions from its oldest transaction up).
func TestIdlePath_CostIsFlatOverHistoryPartitions(t *testing.T) {
	db, b := setup(t)
	parts := manyPastPartitions(t, db, 30)
	if parts < 30 {
		t.Fatalf("setup: %d outbox partitions, want 30 or more", parts)
	}
	emit(t, db.Pool, "iu", typDry, 3)
	caughtUpAndFresh(t, db, b.worker)

	conn := db.Conn(t)
	ctx := pgtest.Ctx(t)
	for _, stmt := range []string{
		`SET plan_cache_mode = force_generic_plan`,
		`PREPARE idle_rows(text, pg_snapshot, pg_snapshot) AS SELECT * FROM iu_core.fn_iu_route_worker_idle_rows($1, $2, $3)`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	var raw []byte
	var done string
	if err := conn.QueryRow(ctx, `SELECT done_snapshot::text FROM iu_route_worker_cursor WHERE worker_name = $1`, b.worker).Scan(&done); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE idle_rows('iu', '`+done+`', pg_current_snapshot())`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var out []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	var below []string
	db.QueryRow(t, `
		SELECT coalesce(array_agg(p.partition_name ORDER BY p.partition_name), '{}')
		  FROM iu_history_partition p, iu_route_worker_cursor c
		 WHERE p.table_name = 'event_outbox' AND c.worker_name = $1
		   AND p.upper_txid <= pg_snapshot_xmin(c.done_snapshot)`, []any{b.worker}, &below)
	if len(below) < 10 {
		t.Fatalf("setup: only %d of %d partitions lie below the stored position (want 10 or more to show pruning)", len(below), parts)
	}
	started := map[string]bool{}
	walkPlan(out[0].Plan, func(n planNode) {
		if strings.HasPrefix(n.RelationName, "event_outbox") {
			started[n.RelationName] = true
		}
	})
	for _, p := range below {
		if started[p] {
			t.Fatalf("the idle outbox question starts a scan on %s, wholly below the stored position (%d of %d partitions started: %v)",
				p, len(started), parts, started)
		}
	}
	if !probeQuiet(t, db.Pool, b.worker) {
		t.Fatal("a caught-up worker over many partitions must still be quiet")
	}
	emit1(t, db.Pool, typDry)
	requireCounts(t, run(t, db.Pool, b.worker, 100), map[string]int{"claimed": 1})
}

// Rule: a caught-up poll whose stored position lists no transaction in progress (the
// common case: nothing was running when the worker last moved) pays for one outbox scan
// per partition it must look at, and none for the late-commit question, which has nothing
// to ask. That question's bounds then prune every partition before a scan is started
// (an empty range [xmin, xmax) alone would still keep the partition holding that value,
// and each started scan is work on every poll of every worker).
// Not parallel: another test's transaction running while the position is stored would be
// listed in it.
func TestIdlePath_NothingInProgressStartsNoLateCommitScan(t *testing.T) {
	db, b := setup(t)
	emit(t, db.Pool, "iu", typDry, 2)
	// Store a position that lists no transaction in progress: route one more event until
	// nothing else was running at that moment (an autovacuum ANALYZE may be).
	for i := 0; ; i++ {
		caughtUpAndFresh(t, db, b.worker)
		if scalar(t, db, `SELECT count(*) FROM iu_route_worker_cursor c, pg_snapshot_xip(c.done_snapshot) x
		                   WHERE c.worker_name = $1`, b.worker) == 0 {
			break
		}
		if i == 20 {
			t.Fatal("setup: every stored position lists a transaction in progress")
		}
		emit1(t, db.Pool, typDry)
	}

	conn := db.Conn(t)
	ctx := pgtest.Ctx(t)
	for _, stmt := range []string{
		`SET plan_cache_mode = force_generic_plan`,
		`PREPARE idle_rows(text, pg_snapshot) AS SELECT * FROM iu_core.fn_iu_route_worker_idle_rows($1, $2, pg_current_snapshot())`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	var done string
	if err := conn.QueryRow(ctx, `SELECT done_snapshot::text FROM iu_route_worker_cursor WHERE worker_name = $1`, b.worker).Scan(&done); err != nil {
		t.Fatal(err)
	}
	var raw []byte
	if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE idle_rows('iu', '`+done+`')`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var out []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	scans := map[string]int{}
	walkPlan(out[0].Plan, func(n planNode) {
		if strings.HasPrefix(n.RelationName, "event_outbox") {
			scans[n.RelationName]++
		}
	})
	if len(scans) == 0 {
		t.Fatal("the idle outbox question started no scan at all: it must still look for new rows")
	}
	for rel, n := range scans {
		if n > 1 {
			t.Fatalf("position %s lists no transaction, yet the idle outbox question starts %d scans on %s (all: %v)",
				done, n, rel, scans)
		}
	}
	if !probeQuiet(t, db.Pool, b.worker) {
		t.Fatal("a caught-up worker must be quiet")
	}
}

// probeColumns is what the idle probe says about a worker, as the run asks it: quiet (the
// part of the question it asks) and more (the rest must be asked too).
func probeColumns(t testing.TB, q querier, worker string) (quiet, more bool) {
	t.Helper()
	var qu, mo *bool
	if err := q.QueryRow(pgtest.Ctx(t), `SELECT p.quiet, p.more FROM iu_core.fn_iu_route_worker_idle_probe($1, 100) p`, worker).Scan(&qu, &mo); err != nil {
		t.Fatalf("idle probe: %v", err)
	}
	return qu != nil && *qu, mo != nil && *mo
}

// nextPastCeiling: the next transaction id lies at or above the hot ceiling.
func nextPastCeiling(t testing.TB, db *pgtest.DB) bool {
	t.Helper()
	return scalar(t, db, `SELECT (pg_snapshot_xmax(pg_current_snapshot()) > iu_core.fn_iu_outbox_hot_ceiling('iu'))::int`) == 1
}

// Rule: between two crossings a caught-up poll plans one outbox partition. Partition
// maintenance writes the hot bound and the hot ceiling (fn_iu_outbox_hot_refresh): the lower
// bound of the oldest open partition and the upper bound of the one the next transaction id
// lands in. The probe's new-rows question is planned over [bound, ceiling): one index scan
// of that one partition, no Append, so nothing to prune when a poll starts (the partitions
// ahead and the default one are not in the plan at all), and the probe needs no second
// question (more is false).
// Not parallel: transactions of concurrent tests would keep partitions open.
func TestIdlePath_PlansOnePartitionBetweenCrossings(t *testing.T) {
	plansOnePartitionBetweenCrossings(t, pgtest.NewDB(t))
}

func plansOnePartitionBetweenCrossings(t *testing.T, db *pgtest.DB) {
	db, b := setupOn(t, db)
	if parts := manyPastPartitions(t, db, 5); parts < 5 {
		t.Fatalf("setup: %d outbox partitions, want 5 or more", parts)
	}
	emit(t, db.Pool, "iu", typDry, 2)
	caughtUpAndFresh(t, db, b.worker)
	// Partitions are 1,000 txids wide here: should txids have crossed into the next one
	// meanwhile, maintenance again (as the runner's next tick would).
	for i := 0; i == 0 || (i < 3 && nextPastCeiling(t, db)); i++ {
		db.Exec(t, `SELECT fn_iu_partition_maintain()`)
	}
	var part string
	var upper, ceiling int
	db.QueryRow(t, `
		SELECT p.partition_name, p.upper_txid::text::bigint, iu_core.fn_iu_outbox_hot_ceiling('iu')::text::bigint
		  FROM iu_history_partition p
		 WHERE p.table_name = 'event_outbox'
		   AND p.lower_txid <= pg_snapshot_xmax(pg_current_snapshot()) AND p.upper_txid > pg_snapshot_xmax(pg_current_snapshot())`,
		nil, &part, &upper, &ceiling)
	if ceiling != upper {
		t.Fatalf("hot ceiling %d: want %d, the upper bound of %s, the partition the next txid lands in", ceiling, upper, part)
	}

	conn := db.Conn(t)
	ctx := pgtest.Ctx(t)
	for _, stmt := range []string{
		`SET plan_cache_mode = force_generic_plan`,
		`PREPARE probe(text) AS SELECT * FROM iu_core.fn_iu_route_worker_idle_probe($1, 100)`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	var raw []byte
	if err := conn.QueryRow(ctx, `EXPLAIN (FORMAT JSON) EXECUTE probe('`+b.worker+`')`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var out []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	var scans []string
	appends := 0
	walkPlan(out[0].Plan, func(n planNode) {
		if strings.HasPrefix(n.RelationName, "event_outbox") {
			scans = append(scans, n.RelationName)
		}
		if n.NodeType == "Append" || n.NodeType == "MergeAppend" {
			appends++
		}
	})
	if len(scans) != 1 || scans[0] != part || appends != 0 {
		t.Fatalf("the idle probe's plan scans %v with %d Append nodes: want one scan of %s and no Append", scans, appends, part)
	}
	if quiet, more := probeColumns(t, db.Pool, b.worker); !quiet || more {
		t.Fatalf("a caught-up worker between crossings: probe quiet %v, more %v; want true, false", quiet, more)
	}
	if m := run(t, db.Pool, b.worker, 100); m["idle"] != true {
		t.Fatalf("want the idle answer, got %v", m)
	}
}

// Rule: the hot ceiling decides what a poll plans, never what it finds. Once txids cross
// into the partition above it (before maintenance moves it up), the probe says so (more),
// and the run asks the rows above the ceiling too (fn_iu_route_worker_idle_above): a
// caught-up poll is still answered by the idle path (nothing written), and an event above
// the ceiling, which the probe's own question does not see, is routed, once. The next
// maintenance moves the ceiling above it.
// Not parallel, as above.
// caughtUpPastTheCeiling gives the outbox three or more partitions, routes two events, has
// maintenance set the hot ceiling and returns it, then commits other traffic (one transaction
// id at a time) until txids pass it, into the next partition.
func caughtUpPastTheCeiling(t *testing.T, db *pgtest.DB, worker string) int {
	t.Helper()
	if parts := manyPastPartitions(t, db, 3); parts < 3 {
		t.Fatalf("setup: %d outbox partitions, want 3 or more", parts)
	}
	emit(t, db.Pool, "iu", typDry, 2)
	caughtUpAndFresh(t, db, worker)
	db.Exec(t, `SELECT fn_iu_partition_maintain()`)
	ceiling := scalar(t, db, `SELECT iu_core.fn_iu_outbox_hot_ceiling('iu')::text::bigint`)
	db.Exec(t, fmt.Sprintf(`DO $$ BEGIN
		WHILE pg_snapshot_xmax(pg_current_snapshot()) <= '%d'::xid8 LOOP PERFORM pg_current_xact_id(); COMMIT; END LOOP;
	END $$`, ceiling))
	return ceiling
}

func TestIdlePath_RowsAboveTheHotCeilingAreRouted(t *testing.T) {
	rowsAboveTheHotCeilingAreRouted(t, pgtest.NewDB(t))
}

func rowsAboveTheHotCeilingAreRouted(t *testing.T, db *pgtest.DB) {
	db, b := setupOn(t, db)
	ceiling := caughtUpPastTheCeiling(t, db, b.worker)
	if !nextPastCeiling(t, db) {
		t.Fatal("setup: txids did not pass the hot ceiling")
	}
	if quiet, more := probeColumns(t, db.Pool, b.worker); !quiet || !more {
		t.Fatalf("caught up, txids past the ceiling: probe quiet %v, more %v; want true, true", quiet, more)
	}
	ctx := pgtest.Ctx(t)
	tx, err := db.Conn(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m := run(t, tx, b.worker, 100); m["idle"] != true || m["claimed"] != 0.0 {
		t.Fatalf("nothing to route past the ceiling: want the idle answer, got %v", m)
	}
	var wrote bool
	if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id_if_assigned() IS NOT NULL`).Scan(&wrote); err != nil || wrote {
		t.Fatalf("the idle run past the ceiling wrote (%v, %v)", wrote, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	id := emit1(t, db.Pool, typDry)
	if above := scalar(t, db, `SELECT (txid >= iu_core.fn_iu_outbox_hot_ceiling('iu'))::int FROM event_outbox WHERE id = $1::uuid`, id); above != 1 {
		t.Fatal("setup: the event does not lie above the hot ceiling")
	}
	if quiet, _ := probeColumns(t, db.Pool, b.worker); !quiet {
		t.Fatal("setup: the probe's own question (below the ceiling) should not see the event")
	}
	if !claimHasRows(t, db.Pool, b.worker) || probeQuiet(t, db.Pool, b.worker) {
		t.Fatal("an event above the ceiling: the claim has it, the idle question must not be quiet")
	}
	requireCounts(t, run(t, db.Pool, b.worker, 100), map[string]int{"claimed": 1})
	if attemptCount(t, db, id) != 1 {
		t.Fatal("the event above the ceiling was not routed exactly once")
	}
	db.Exec(t, `SELECT fn_iu_partition_maintain()`)
	if moved := scalar(t, db, `SELECT iu_core.fn_iu_outbox_hot_ceiling('iu')::text::bigint`); moved <= ceiling {
		t.Fatalf("maintenance left the ceiling at %d (was %d)", moved, ceiling)
	}
}

// Rule: a poll that begins after an event committed never answers idle, even when partition
// maintenance moves the outbox's hot ceiling in the middle of the poll. The run asks the new
// rows below the ceiling in its probe, then (txids having passed it) the rows at or above it in
// a second statement; the ceiling is a constant of each statement's plan. Maintenance that
// commits between the two moved the second statement's ceiling up, and the rows between the
// old ceiling and the new one were asked by neither: the run answered idle and caught up with
// the event still owed (found by a review: the event waited for the next poll, and a runner's
// tick stops its loop on caught_up). Staged deterministically: the event lies above the old
// ceiling; maintenance's refresh holds the event's partition locked, so the run's second
// statement waits for the refresh's commit and is planned after it.
func TestIdlePath_CeilingMovedMidPollIsNotIdle(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	ceiling := caughtUpPastTheCeiling(t, db, b.worker)
	ctx := pgtest.Ctx(t)
	w := db.Conn(t)
	// A poll past the ceiling first: the run's statements are planned and cached in w.
	if m := run(t, w, b.worker, 100); m["idle"] != true {
		t.Fatalf("setup: want the idle answer, got %v", m)
	}
	var wPID int
	if err := w.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&wPID); err != nil {
		t.Fatal(err)
	}
	id := emit1(t, db.Pool, typDry)
	var part string
	var above bool
	db.QueryRow(t, `SELECT tableoid::regclass::text, txid >= iu_core.fn_iu_outbox_hot_ceiling('iu') FROM event_outbox WHERE id = $1::uuid`,
		[]any{id}, &part, &above)
	if !above {
		t.Fatal("setup: the event does not lie above the hot ceiling")
	}
	// Maintenance's refresh of the two constants, its commit held while the event's partition
	// is locked.
	tx, err := db.Conn(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `LOCK TABLE `+part+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	var moved int
	// (Read in a statement of its own: one planned with the refresh would hold the old constant.)
	if _, err := tx.Exec(ctx, `SELECT iu_core.fn_iu_outbox_hot_refresh()`); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, `SELECT iu_core.fn_iu_outbox_hot_ceiling('iu')::text::bigint`).Scan(&moved); err != nil {
		t.Fatal(err)
	}
	if moved <= ceiling {
		t.Fatalf("setup: the refresh left the ceiling at %d (was %d)", moved, ceiling)
	}
	type answer struct {
		m   map[string]any
		err error
	}
	done := make(chan answer, 1)
	go func() {
		var raw []byte
		err := w.QueryRow(ctx, `SELECT fn_iu_route_worker_run($1, 100)`, b.worker).Scan(&raw)
		var m map[string]any
		if err == nil {
			err = json.Unmarshal(raw, &m)
		}
		done <- answer{m, err}
	}()
	// The run has asked its probe and waits on the partition, in its second statement.
	db.WaitUntil(t, 10*time.Second, `SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock')`, wPID)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.m["idle"] == true || a.m["claimed"] != 1.0 {
		t.Fatalf("the ceiling moved mid-poll: the run must route the committed event, got %v", a.m)
	}
	if attemptCount(t, db, id) != 1 {
		t.Fatal("the event was not routed exactly once")
	}
}

// Rule: a summary never vanishes. The counts are JSON text built from the tally, so a count
// that is NULL would null the whole text, and with it the run's answer; it is written as
// JSON null instead, as jsonb_build_object writes a NULL.
func TestSummary_NullCountIsJSONNull(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	var counts map[string]any
	db.QueryRow(t, `SELECT iu_core.fn_iu_route_worker_summary_counts(
	                    ROW(NULL, 0, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL)::iu_core.iu_route_run_tally,
	                    NULL, 1, 1, NULL, true)`, nil, &counts)
	if counts == nil {
		t.Fatal("the counts vanished: NULL instead of a JSON object")
	}
	for _, k := range []string{"claimed", "window_open", "caught_up"} {
		if v, ok := counts[k]; !ok || v != nil {
			t.Errorf("%s: want JSON null, got %v (present %v)", k, v, ok)
		}
	}
	if counts["windows_opened"] != float64(1) || counts["idle"] != true || counts["fallback"] != false {
		t.Errorf("the other counts: %v", counts)
	}
}

// Rule: a history kept forever does not make a caught-up poll dearer. PostgreSQL locks every
// relation of a kept (generic) plan each time it runs it, pruned or not, so the idle path's
// outbox question must not have the closed partitions in its plan at all: it bounds txid by
// the hot bound (fn_iu_outbox_hot_txid, the oldest open partition's lower bound, moved by
// maintenance as partitions close), a constant when the statement is planned. An idle run
// over 30+ closed partitions holds locks on the open outbox partitions only (and the
// default one), never on a closed one; and it is still the idle path (nothing written).
// Not parallel: transactions of concurrent tests would hold the cluster's xmin back, and no
// partition would close.
func TestIdlePath_PlansOnlyTheOpenPartitions(t *testing.T) {
	plansOnlyTheOpenPartitions(t, pgtest.NewDB(t))
}

func plansOnlyTheOpenPartitions(t *testing.T, db *pgtest.DB) {
	db, b := setupOn(t, db)
	if parts := manyPastPartitions(t, db, 30); parts < 30 {
		t.Fatalf("setup: %d outbox partitions, want 30 or more", parts)
	}
	db.Exec(t, `SELECT fn_iu_partition_maintain()`)
	emit(t, db.Pool, "iu", typDry, 2)
	caughtUpAndFresh(t, db, b.worker)

	closed := scalar(t, db, `SELECT count(*) FROM iu_history_partition WHERE table_name = 'event_outbox' AND closed_at IS NOT NULL`)
	if closed < 25 || scalar(t, db, `SELECT (iu_core.fn_iu_outbox_hot_txid('iu') > '0')::int`) != 1 {
		t.Fatalf("setup: %d closed partitions and hot bound %d > 0: want 25+ and a bound", closed,
			scalar(t, db, `SELECT iu_core.fn_iu_outbox_hot_txid('iu')::text::bigint`))
	}
	ctx := pgtest.Ctx(t)
	conn := db.Conn(t)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck
	if m := run(t, tx, b.worker, 100); m["idle"] != true {
		t.Fatalf("a caught-up worker: want the idle answer, got %v", m)
	}
	var lockedClosed, lockedOpen int
	if err := tx.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE p.closed_at IS NOT NULL), count(*) FILTER (WHERE p.closed_at IS NULL)
		  FROM pg_locks l JOIN iu_history_partition p ON p.partition_name = l.relation::regclass::text
		 WHERE l.pid = pg_backend_pid() AND l.locktype = 'relation' AND p.table_name = 'event_outbox'`).Scan(&lockedClosed, &lockedOpen); err != nil {
		t.Fatal(err)
	}
	if lockedClosed != 0 || lockedOpen == 0 {
		t.Fatalf("an idle run locked %d closed and %d open outbox partitions: want 0 closed (of %d) and the open ones", lockedClosed, lockedOpen, closed)
	}
	var wrote bool
	if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id_if_assigned() IS NOT NULL`).Scan(&wrote); err != nil || wrote {
		t.Fatalf("the idle run wrote (%v, %v)", wrote, err)
	}
}

// Rule: a worker whose position lies below the hot bound (partitions closed since it last
// moved) misses nothing and is not left on a dear path. A lagging worker whose events lie
// in the closed partitions below the bound is not quiet and routes them. A caught-up worker
// of a quiet domain: its first poll takes the full pass, which finds nothing and moves the
// position up to the empty window it closed (one write, once); the polls after it are
// answered by the idle path, and an event emitted then is routed exactly once.
// Not parallel, as above.
func TestIdlePath_PositionBelowTheHotBoundMovesUpOnce(t *testing.T) {
	positionBelowTheHotBoundMovesUpOnce(t, pgtest.NewDB(t))
}

func positionBelowTheHotBoundMovesUpOnce(t *testing.T, db *pgtest.DB) {
	db, b := setupOn(t, db)
	if parts := manyPastPartitions(t, db, 5); parts < 5 {
		t.Fatalf("setup: %d outbox partitions, want 5 or more", parts)
	}
	db.Exec(t, `SELECT fn_iu_partition_maintain()`)
	const lag = "w_lag"
	db.Exec(t, `SELECT fn_iu_route_worker_register($1)`, lag)
	caughtUpAndFresh(t, db, lag)
	lagged := emit(t, db.Pool, "iu", typDry, 2)
	caughtUpAndFresh(t, db, b.worker)
	// Three partition widths of other traffic: the worker's partition closes.
	db.Exec(t, `DO $$ BEGIN FOR i IN 1..3000 LOOP PERFORM pg_current_xact_id(); COMMIT; END LOOP; END $$`)
	db.Exec(t, `SELECT fn_iu_partition_maintain()`)
	before := scalar(t, db, `SELECT pg_snapshot_xmin(done_snapshot)::text::bigint FROM iu_route_worker_cursor WHERE worker_name = $1`, b.worker)
	hot := scalar(t, db, `SELECT iu_core.fn_iu_outbox_hot_txid('iu')::text::bigint`)
	if hot <= before {
		t.Fatalf("setup: the hot bound %d must lie above the position %d", hot, before)
	}
	db.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now() WHERE executor_id IN ($1, $2)`, b.worker, lag)
	if probeQuiet(t, db.Pool, lag) {
		t.Fatal("a lagging worker whose events lie below the hot bound: the probe must not be quiet")
	}
	requireCounts(t, run(t, db.Pool, lag, 100), map[string]int{"claimed": 2})
	for _, id := range lagged {
		if attemptCount(t, db, id) != 2 {
			t.Fatalf("event %s: want one attempt of each worker", id)
		}
	}
	if probeQuiet(t, db.Pool, b.worker) {
		t.Fatal("a position below the hot bound: the idle question cannot answer, the probe must not be quiet")
	}
	if m := run(t, db.Pool, b.worker, 100); m["idle"] != true || m["claimed"] != 0.0 {
		t.Fatalf("nothing to route: want an idle answer, got %v", m)
	}
	after := scalar(t, db, `SELECT pg_snapshot_xmin(done_snapshot)::text::bigint FROM iu_route_worker_cursor WHERE worker_name = $1`, b.worker)
	if after < hot {
		t.Fatalf("the position stayed below the hot bound (%d < %d)", after, hot)
	}
	if !probeQuiet(t, db.Pool, b.worker) {
		t.Fatal("after the move, a caught-up worker must be quiet again")
	}
	id := emit1(t, db.Pool, typDry)
	requireCounts(t, run(t, db.Pool, b.worker, 100), map[string]int{"claimed": 1})
	if attemptCount(t, db, id) != 1 {
		t.Fatal("the event was not routed exactly once")
	}
}

// Rule: the idle path's statements run on PostgreSQL 13, the oldest supported version,
// whose run-time partition pruning refuses some query shapes 15 accepts (the probe asks the
// outbox in a subquery correlated with the cursor row, pruned as it runs): the partition
// rules above, on a PostgreSQL 13 cluster of the test's own.
func TestIdlePath_PostgreSQL13(t *testing.T) {
	h := pgtest.MajorHarness(t, 13)
	t.Run("plans only the open partitions", func(t *testing.T) { plansOnlyTheOpenPartitions(t, h.NewDBOn(t, true)) })
	t.Run("position below the hot bound", func(t *testing.T) { positionBelowTheHotBoundMovesUpOnce(t, h.NewDBOn(t, true)) })
	t.Run("one partition between crossings", func(t *testing.T) { plansOnePartitionBetweenCrossings(t, h.NewDBOn(t, true)) })
	t.Run("rows above the hot ceiling", func(t *testing.T) { rowsAboveTheHotCeilingAreRouted(t, h.NewDBOn(t, true)) })
}
