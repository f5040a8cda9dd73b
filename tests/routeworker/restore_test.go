package routeworker

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule (late commits are never skipped), the caller's own transaction: a run inside a
// transaction that inserted events, with a newer transaction completing meanwhile, must
// not treat its own still-uncommitted transaction as done. Events it inserted before and
// after the run are routed exactly once after it commits. (pg_current_snapshot() leaves
// the caller's own xid out of the in-progress list; the window must put it back.)
func TestCursor_OwnTransactionEventsAreNeverSkipped(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	ctx := pgtest.Ctx(t)

	a := db.Conn(t)
	tx, err := a.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	emit1(t, tx, typDry) // assigns A's xid
	// A newer transaction completes, so A's xid falls below the next snapshot's xmax.
	emit1(t, db.Pool, typDry)
	run(t, tx, b.worker, 100) // the run sees A's own row; A is still in progress
	emit1(t, tx, typDry)      // inserted after the run, before A commits
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	emit1(t, db.Pool, typDry) // and more traffic after the commit
	runUntilCaughtUp(t, db.Pool, b.worker, 100)
	if n := requireExactlyOnce(t, db, b.worker); n != 4 {
		t.Fatalf("want 4 iu events routed exactly once, found %d", n)
	}
}

// Rule (cursor sanity): event rows restored from another cluster carry transaction ids
// at or beyond this cluster's next xid, so no window would ever see them. They must be
// detected and reported (IU002 with the fix in the HINT, from the run at the latest when
// its next beat is due, as a caught-up poll leaves them to the full pass; health says
// cursor_ok false at once), not silently stall; the documented fix re-stamps only their
// txid, after which they are routed exactly once — and the log stays append-only for every
// other change.
func TestCursor_RowsFromAnotherClusterAreReportedAndRebased(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	ctx := pgtest.Ctx(t)
	emit1(t, db.Pool, typDry)
	runUntilCaughtUp(t, db.Pool, b.worker, 100)

	// A restored row: its txid comes from a cluster far ahead of this one.
	// Loaded as pg_dump restores it: the data before the NOT VALID txid rule.
	db.Exec(t, `ALTER DOMAIN iu_txid DROP CONSTRAINT event_outbox_txid_is_inserter`)
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream, txid)
	            VALUES ('iu', 'dry', 's', '900000000')`)
	db.Exec(t, `ALTER DOMAIN iu_txid ADD CONSTRAINT event_outbox_txid_is_inserter
	            CHECK (VALUE = pg_catalog.pg_current_xact_id() OR iu_core.fn_iu_event_outbox_package_only(NULL)) NOT VALID`)
	db.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now() - interval '1 hour' WHERE executor_id = $1`, b.worker)
	_, err := runErr(t, db.Pool, b.worker, 100)
	e := pgtest.RequireSQLState(t, err, "IU002")
	if !strings.HasPrefix(e.Message, "fn_iu_route_worker_run: ") || !strings.Contains(e.Message, "another cluster") ||
		!strings.Contains(e.Hint, "SELECT fn_iu_event_outbox_rebase_foreign_txids()") {
		t.Fatalf("message %q hint %q", e.Message, e.Hint)
	}
	var raw []byte
	db.QueryRow(t, `SELECT fn_iu_route_worker_health($1)`, []any{b.worker}, &raw)
	var h map[string]any
	if err := json.Unmarshal(raw, &h); err != nil {
		t.Fatal(err)
	}
	if h["cursor_ok"] != false || h["foreign_txid_rows"] != true ||
		!strings.Contains(h["cursor_hint"].(string), "fn_iu_event_outbox_rebase_foreign_txids") {
		t.Fatalf("health: cursor_ok %v foreign_txid_rows %v hint %v", h["cursor_ok"], h["foreign_txid_rows"], h["cursor_hint"])
	}

	// The rebase path is for txid only: the flag does not unlock any other change.
	conn := db.Conn(t)
	if _, err := conn.Exec(ctx, `SET iu.rebase_txid = 'on'`); err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, `UPDATE event_outbox SET event_stream = 'changed' WHERE txid = '900000000'`)
	pgtest.RequireSQLState(t, err, "IU001")

	var rebased int
	db.QueryRow(t, `SELECT (fn_iu_event_outbox_rebase_foreign_txids()->>'rebased')::int`, nil, &rebased)
	if rebased != 1 {
		t.Fatalf("rebased %d rows, want 1", rebased)
	}
	db.QueryRow(t, `SELECT (fn_iu_event_outbox_rebase_foreign_txids()->>'rebased')::int`, nil, &rebased)
	if rebased != 0 {
		t.Fatalf("a second rebase moved %d rows, want 0", rebased)
	}
	got := runUntilCaughtUp(t, db.Pool, b.worker, 100)
	if got["claimed"] != 1 {
		t.Fatalf("after the rebase the restored event must be routed once, claimed %v", got)
	}
	requireExactlyOnce(t, db, b.worker)
}
