package retention

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/migrate"
	"github.com/iu-core/event-worker/internal/pgtest"
	sqlfiles "github.com/iu-core/event-worker/sql"
)

// width is the partition width the tests use (retention.partition_txids): small enough
// that a test can burn through a partition's txids in a moment.
const width = 1000

// setup gives a test its own database, migrated to the last migration but with the partitioning (013_partitioned_history) run
// (down and up again) under retention.partition_txids = width, both gates open, routes
//
//	iu/dry  -> r_dry  enabled, dry_run  -> "dry_run"
//	iu/live -> r_live enabled, !dry_run -> "failed" + dead letter (the seam fails closed)
//
// and the worker "w" registered at the start of the stream.
func setup(t *testing.T) *pgtest.DB {
	t.Helper()
	return setupOn(t, pgtest.NewDB(t))
}

// setupOn is setup on a migrated database of any harness (the PostgreSQL 13 test's).
func setupOn(t *testing.T, db *pgtest.DB) *pgtest.DB {
	t.Helper()
	return setupOnWidth(t, db, width)
}

// setupOnWidth is setupOn with partitions w txids wide.
func setupOnWidth(t *testing.T, db *pgtest.DB, w int) *pgtest.DB {
	t.Helper()
	m, err := migrate.Open(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	downBeforeConversion(t, m)
	db.Exec(t, fmt.Sprintf(`INSERT INTO dot_config (key, value) VALUES ('retention.partition_txids', '%d')`, w))
	if _, err := m.Up(pgtest.Ctx(t)); err != nil {
		t.Fatalf("partitioning up: %v", err)
	}
	seed(t, db)
	return db
}

// seed registers the event types, routes and the worker "w", and opens both gates.
func seed(t *testing.T, db *pgtest.DB) {
	t.Helper()
	db.Exec(t, `
		INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'dry'), ('iu', 'live'), ('other', 'x');
		INSERT INTO iu_outbound_route (event_domain, event_type, event_stream, route_key, enabled, dry_run) VALUES
			('iu', 'dry',  's', 'r_dry',  true, true),
			('iu', 'live', 's', 'r_live', true, false);
		UPDATE dot_config SET value = 'true'
		 WHERE key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled');`)
	db.Exec(t, `SELECT fn_iu_route_worker_register('w')`)
}

// emit inserts n committed iu events of one type in one transaction and returns its txid.
// Partition maintenance runs first in the same transaction, so the events land in a
// regular partition however many transaction ids the package's other tests consume
// meanwhile (parallel tests burn thousands, and partitions are only 1,000 wide here).
func emit(t *testing.T, db *pgtest.DB, typ string, n int) string {
	t.Helper()
	ctx := pgtest.Ctx(t)
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck
	var partitioned bool                    // before the partitioning (the conversion tests) there is nothing to maintain
	if err := tx.QueryRow(ctx, `SELECT relkind = 'p' FROM pg_class WHERE oid = 'event_outbox'::regclass`).Scan(&partitioned); err != nil {
		t.Fatal(err)
	}
	if partitioned {
		if _, err := tx.Exec(ctx, `SELECT fn_iu_partition_maintain()`); err != nil {
			t.Fatalf("maintenance before emitting: %v", err)
		}
	}
	txid := emitOn(t, tx, typ, n)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return txid
}

// emitWithoutMaintenance is emit as a producer does it: no maintenance first (beyond the
// last partition, the events land in the default partition).
func emitWithoutMaintenance(t *testing.T, db *pgtest.DB, typ string, n int) string {
	t.Helper()
	return emitOn(t, db.Pool, typ, n)
}

func emitOn(t *testing.T, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, typ string, n int) string {
	t.Helper()
	var txid string
	if err := q.QueryRow(pgtest.Ctx(t), `
		WITH ins AS (INSERT INTO event_outbox (event_domain, event_type, event_stream)
		             SELECT 'iu', $1, 's' FROM generate_series(1, $2::int) RETURNING txid)
		SELECT min(txid::text::numeric)::text FROM ins`, typ, n).Scan(&txid); err != nil {
		t.Fatalf("emit %s x%d: %v", typ, n, err)
	}
	return txid
}

// burn consumes n transaction ids (n committed transactions), so the partitions below
// them close.
func burn(t *testing.T, db *pgtest.DB, n int) {
	t.Helper()
	c := db.Conn(t)
	if _, err := c.Exec(pgtest.Ctx(t), `SET synchronous_commit = off`); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(pgtest.Ctx(t), fmt.Sprintf(
		`DO $$ BEGIN FOR i IN 1..%d LOOP PERFORM pg_current_xact_id(); COMMIT; END LOOP; END $$`, n)); err != nil {
		t.Fatalf("burning %d txids: %v", n, err)
	}
}

// doc runs a query returning one jsonb document and decodes it.
func doc(t *testing.T, db *pgtest.DB, sql string, args ...any) map[string]any {
	t.Helper()
	var raw []byte
	db.QueryRow(t, sql, args, &raw)
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v: %s", sql, err, raw)
	}
	return m
}

func maintain(t *testing.T, db *pgtest.DB) map[string]any {
	t.Helper()
	return doc(t, db, `SELECT fn_iu_partition_maintain()`)
}

func retention(t *testing.T, db *pgtest.DB, dryRun bool) map[string]any {
	t.Helper()
	return doc(t, db, `SELECT fn_iu_retention_run($1)`, dryRun)
}

// runUntilCaughtUp runs a worker until a run reports caught_up; returns the events claimed.
func runUntilCaughtUp(t *testing.T, db *pgtest.DB, worker string) int {
	t.Helper()
	claimed := 0
	for i := 0; i < 1000; i++ {
		m := doc(t, db, `SELECT fn_iu_route_worker_run($1, 100)`, worker)
		claimed += int(m["claimed"].(float64))
		if m["caught_up"] == true {
			return claimed
		}
	}
	t.Fatalf("worker %s never caught up", worker)
	return 0
}

// partitionOf names the event_outbox partition holding the row with this txid.
func partitionOf(t *testing.T, db *pgtest.DB, table, txid string) string {
	t.Helper()
	var name string
	db.QueryRow(t, `SELECT partition_name FROM iu_history_partition
	                 WHERE table_name = $1 AND (lower_txid IS NULL OR lower_txid <= $2::xid8) AND upper_txid > $2::xid8`,
		[]any{table, txid}, &name)
	return name
}

func exists(t *testing.T, db *pgtest.DB, rel string) bool {
	t.Helper()
	var ok bool
	db.QueryRow(t, `SELECT to_regclass($1) IS NOT NULL`, []any{rel}, &ok)
	return ok
}

// entries returns the items of a retention answer's "dropped" or "kept" list for one partition.
func entries(m map[string]any, list, partition string) []map[string]any {
	var out []map[string]any
	arr, _ := m[list].([]any)
	for _, e := range arr {
		if em, ok := e.(map[string]any); ok && em["partition"] == partition {
			out = append(out, em)
		}
	}
	return out
}

func scalar(t *testing.T, db *pgtest.DB, sql string, args ...any) int {
	t.Helper()
	var n int
	db.QueryRow(t, sql, args, &n)
	return n
}

// requireExactlyOnce fails unless every iu event still in the outbox has exactly one
// first attempt of the worker.
func requireExactlyOnce(t *testing.T, db *pgtest.DB, worker string) {
	t.Helper()
	bad := scalar(t, db, `
		SELECT count(*) FROM event_outbox e
		 WHERE e.event_domain = 'iu'
		   AND (SELECT count(*) FROM iu_route_attempt a
		         WHERE a.event_ref = e.id AND a.worker_name = $1 AND a.attempt_no = 1) <> 1`, worker)
	if bad != 0 {
		t.Fatalf("worker %s: %d iu events do not have exactly one attempt", worker, bad)
	}
}

// waitClosed calls fn_iu_partition_maintain until the partition is recorded closed (every
// txid in its range finished). Other tests' short transactions in the same cluster may
// hold the xmin horizon for a moment; the partition closes once they end.
func waitClosed(t *testing.T, db *pgtest.DB, partition string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		maintain(t, db)
		var closed bool
		db.QueryRow(t, `SELECT closed_at IS NOT NULL FROM iu_history_partition WHERE partition_name = $1`, []any{partition}, &closed)
		if closed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never closed (a transaction holds the xmin horizon?)", partition)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// downBeforeConversion rolls the migrations back to just before the partitioning
// conversion (NNN_partitioned_history.sql): the unpartitioned install it converts.
func downBeforeConversion(t *testing.T, m *migrate.Migrator) {
	t.Helper()
	entries, err := fs.ReadDir(sqlfiles.Migrations(), ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if num, ok := strings.CutSuffix(e.Name(), "_partitioned_history.sql"); ok {
			v, err := strconv.ParseInt(num, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := m.DownTo(pgtest.Ctx(t), v-1); err != nil {
				t.Fatalf("down to before the partitioning (%s): %v", e.Name(), err)
			}
			return
		}
	}
	t.Fatal("no *_partitioned_history.sql migration")
}
