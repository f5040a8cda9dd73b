package retention

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/migrate"
	"github.com/iu-core/event-worker/internal/pgtest"
)

func keepForDays(t *testing.T, db *pgtest.DB, outbox, attempts string) {
	t.Helper()
	db.Exec(t, `UPDATE dot_config SET value = $1 WHERE key = 'retention.event_outbox_days'`, outbox)
	db.Exec(t, `UPDATE dot_config SET value = $1 WHERE key = 'retention.route_attempt_days'`, attempts)
}

// Rule: a partition is dropped only when every registered worker's cursor has passed all
// of it — refused while one worker (here: one that never ran) still has rows to route in
// it, dropped once both passed; a dry run drops nothing; each drop is in the ledger (range,
// rows, by whom); and the workers route correctly across the drop (events before and
// after it: nothing missed, nothing twice).
func TestRetention_DropsOnlyWhatEveryCursorPassed(t *testing.T) {
	t.Parallel()
	dropsOnlyWhatEveryCursorPassed(t, setup(t))
}

func dropsOnlyWhatEveryCursorPassed(t *testing.T, db *pgtest.DB) {
	keepForDays(t, db, "0", "0")
	db.Exec(t, `SELECT fn_iu_route_worker_register('w2')`)

	old := emit(t, db, "dry", 5)
	po, pa := partitionOf(t, db, "event_outbox", old), partitionOf(t, db, "iu_route_attempt", old)
	if !strings.HasPrefix(po, "event_outbox_p") || !strings.HasPrefix(pa, "iu_route_attempt_p") {
		t.Fatalf("events after the conversion belong in a regular partition, got %q / %q", po, pa)
	}
	burn(t, db, width+100)
	waitClosed(t, db, po)
	mid := emit(t, db, "dry", 2) // a later partition, not routed yet by anyone
	if partitionOf(t, db, "event_outbox", mid) == po {
		t.Fatalf("burned %d txids but the next events are still in %s", width+100, po)
	}

	// Nobody has routed po yet.
	r := retention(t, db, false)
	if k := entries(r, "kept", po); len(k) != 1 || k[0]["reason"] != "cursor_not_passed" ||
		fmt.Sprint(k[0]["workers"]) != "[w w2]" {
		t.Fatalf("a partition no cursor passed must be kept (cursor_not_passed, workers w and w2): %v", r)
	}
	if !exists(t, db, po) {
		t.Fatalf("%s dropped although no cursor passed it", po)
	}

	// w passes it; w2 (never ran) still holds it.
	if n := runUntilCaughtUp(t, db, "w"); n != 7 {
		t.Fatalf("w claimed %d, want 7", n)
	}
	r = retention(t, db, false)
	if k := entries(r, "kept", po); len(k) != 1 || k[0]["reason"] != "cursor_not_passed" || fmt.Sprint(k[0]["workers"]) != "[w2]" {
		t.Fatalf("with w2 behind, %s must be kept for w2 only: %v", po, r)
	}
	if !exists(t, db, po) {
		t.Fatalf("%s dropped while w2 has not passed it", po)
	}

	runUntilCaughtUp(t, db, "w2")
	ledger := scalar(t, db, `SELECT count(*) FROM iu_retention_ledger`)
	dry := retention(t, db, true)
	if len(entries(dry, "dropped", po)) != 1 || len(entries(dry, "dropped", pa)) != 1 {
		t.Fatalf("dry run must report %s and %s as droppable: %v", po, pa, dry)
	}
	if !exists(t, db, po) || !exists(t, db, pa) ||
		scalar(t, db, `SELECT count(*) FROM iu_retention_ledger`) != ledger {
		t.Fatalf("a dry run dropped something")
	}

	r = retention(t, db, false)
	d := entries(r, "dropped", po)
	if len(d) != 1 || d[0]["rows"] != float64(5) {
		t.Fatalf("once every cursor passed, %s (5 rows) must be dropped: %v", po, r)
	}
	if exists(t, db, po) || exists(t, db, pa) {
		t.Fatalf("%s / %s still exist after the drop", po, pa)
	}
	var table, by, sessionUser string
	var rows int
	var ranged bool
	db.QueryRow(t, `SELECT table_name, row_count, dropped_by, dropped_session_user,
	                       lower_txid <= $2::xid8 AND upper_txid > $2::xid8
	                  FROM iu_retention_ledger WHERE partition_name = $1`, []any{po, old},
		&table, &rows, &by, &sessionUser, &ranged)
	if table != "event_outbox" || rows != 5 || by == "" || sessionUser == "" || !ranged {
		t.Fatalf("ledger for %s: table %q rows %d by %q session_user %q range holds the events %v",
			po, table, rows, by, sessionUser, ranged)
	}
	if n := scalar(t, db, `SELECT row_count FROM iu_retention_ledger WHERE partition_name = $1`, pa); n != 10 {
		t.Fatalf("ledger for %s: %d attempt rows, want 10 (5 events x 2 workers)", pa, n)
	}
	// The ledger is append-only.
	_, err := db.Pool.Exec(pgtest.Ctx(t), `DELETE FROM iu_retention_ledger`)
	pgtest.RequireSQLState(t, err, "IU001")

	// Routing goes on across the drop.
	emit(t, db, "dry", 3)
	if n := runUntilCaughtUp(t, db, "w"); n != 3 {
		t.Fatalf("after the drop w claimed %d, want the 3 new events", n)
	}
	if n := runUntilCaughtUp(t, db, "w2"); n != 3 {
		t.Fatalf("after the drop w2 claimed %d, want the 3 new events", n)
	}
	requireExactlyOnce(t, db, "w")
	requireExactlyOnce(t, db, "w2")
	if n := scalar(t, db, `SELECT count(*) FROM event_outbox WHERE event_domain = 'iu'`); n != 5 {
		t.Fatalf("outbox holds %d iu events, want 5 (2 + 3 after the drop)", n)
	}
}

// Rule: never the partition holding current inserts: a partition stays while any
// transaction that may still write into it is open, even with every cursor past its
// committed rows.
//
// Not parallel: the open transaction holds the xmin horizon of the whole cluster, so it
// would keep every other test's partitions open too (which is the rule, cluster-wide).
func TestRetention_KeepsAPartitionWithAnOpenTransaction(t *testing.T) {
	db := setup(t)
	keepForDays(t, db, "0", "0")
	c := db.Conn(t)
	tx, err := c.Begin(pgtest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(pgtest.Ctx(t))
	var held string
	if err := tx.QueryRow(pgtest.Ctx(t), `SELECT pg_current_xact_id()::text`).Scan(&held); err != nil {
		t.Fatal(err)
	}
	p := partitionOf(t, db, "event_outbox", held)
	burn(t, db, width+100)
	maintain(t, db)
	runUntilCaughtUp(t, db, "w")
	var closed bool
	db.QueryRow(t, `SELECT closed_at IS NOT NULL FROM iu_history_partition WHERE partition_name = $1`, []any{p}, &closed)
	if closed {
		t.Fatalf("%s recorded closed while a transaction that may write into it is open", p)
	}
	r := retention(t, db, false)
	if k := entries(r, "kept", p); len(k) != 1 || k[0]["reason"] != "not_closed" {
		t.Fatalf("%s holds an open transaction's txid: want kept as not_closed: %v", p, r)
	}
	// The open transaction can still write there, and its event is routed.
	if _, err := tx.Exec(pgtest.Ctx(t), `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 'dry', 's')`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(pgtest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	if n := runUntilCaughtUp(t, db, "w"); n != 1 {
		t.Fatalf("the late commit's event: claimed %d, want 1", n)
	}
	requireExactlyOnce(t, db, "w")
}

// Rule: dead letters keep their whole event, so an event partition goes once passed even
// with an open dead letter; but the attempt partition of that range stays while the dead
// letter is open (its replay writes the next attempt there, next to the first), and the
// replay works without the event's partition.
func TestRetention_OpenDeadLetterKeepsItsAttemptPartition(t *testing.T) {
	t.Parallel()
	db := setup(t)
	keepForDays(t, db, "0", "0")
	txid := emit(t, db, "live", 1)
	po, pa := partitionOf(t, db, "event_outbox", txid), partitionOf(t, db, "iu_route_attempt", txid)
	runUntilCaughtUp(t, db, "w")
	if n := scalar(t, db, `SELECT count(*) FROM iu_route_dead_letter WHERE resolved_at IS NULL`); n != 1 {
		t.Fatalf("want 1 open dead letter, got %d", n)
	}
	burn(t, db, width+100)
	waitClosed(t, db, po)
	r := retention(t, db, false)
	if len(entries(r, "dropped", po)) != 1 {
		t.Fatalf("the event partition %s must go (the dead letter has the event): %v", po, r)
	}
	if k := entries(r, "kept", pa); len(k) != 1 || k[0]["reason"] != "open_dead_letter" {
		t.Fatalf("the attempt partition %s must stay while the dead letter is open: %v", pa, r)
	}
	db.Exec(t, `UPDATE iu_outbound_route SET dry_run = true WHERE route_key = 'r_live'`)
	rep := doc(t, db, `SELECT fn_iu_route_dead_letter_replay((SELECT id FROM iu_route_dead_letter))`)
	if rep["status"] != "dry_run" || rep["resolved"] != true || rep["attempt_no"] != float64(2) {
		t.Fatalf("replay after the event partition is gone: %v", rep)
	}
	if n := scalar(t, db, fmt.Sprintf(`SELECT count(*) FROM %s`, pgx.Identifier{pa}.Sanitize())); n != 2 {
		t.Fatalf("both attempts of the event belong in %s, found %d there", pa, n)
	}
	r = retention(t, db, false)
	if d := entries(r, "dropped", pa); len(d) != 1 || d[0]["rows"] != float64(2) {
		t.Fatalf("resolved: %s goes now: %v", pa, r)
	}
}

// Rule: retention is off unless configured (missing or empty = keep forever), and a bad
// value is refused with 22023 naming the key before anything is dropped.
func TestRetention_ConfigDefaultsToForeverAndRefusesBadValues(t *testing.T) {
	t.Parallel()
	db := setup(t)
	txid := emit(t, db, "dry", 1)
	p := partitionOf(t, db, "event_outbox", txid)
	burn(t, db, width+100)
	waitClosed(t, db, p)
	runUntilCaughtUp(t, db, "w")
	r := retention(t, db, false)
	if k := entries(r, "kept", p); len(k) != 1 || k[0]["reason"] != "retention_not_configured" || len(r["dropped"].([]any)) != 0 {
		t.Fatalf("without retention keys nothing is dropped: %v", r)
	}
	db.Exec(t, `DELETE FROM dot_config WHERE key LIKE 'retention.%days'`)
	if r := retention(t, db, false); len(r["dropped"].([]any)) != 0 {
		t.Fatalf("missing keys: nothing is dropped: %v", r)
	}
	for _, bad := range []string{"seven", "-1", "7.5", "99999999"} {
		db.Exec(t, `INSERT INTO dot_config (key, value) VALUES ('retention.event_outbox_days', $1)
		            ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, bad)
		_, err := db.Pool.Exec(pgtest.Ctx(t), `SELECT fn_iu_retention_run(false)`)
		e := pgtest.RequireSQLState(t, err, "22023")
		if !strings.HasPrefix(e.Message, "fn_iu_retention_run: ") || !strings.Contains(e.Message, "retention.event_outbox_days") {
			t.Fatalf("value %q: message %q", bad, e.Message)
		}
	}
	if !exists(t, db, p) || scalar(t, db, `SELECT count(*) FROM iu_retention_ledger`) != 0 {
		t.Fatal("a refused run dropped something")
	}
}

// Rule: a partition is history like its table: a single partition refuses DELETE,
// UPDATE and TRUNCATE too (row triggers are cloned by PostgreSQL, the TRUNCATE guard is
// copied by the package).
func TestRetention_PartitionsStayAppendOnly(t *testing.T) {
	t.Parallel()
	db := setup(t)
	txid := emit(t, db, "dry", 1)
	runUntilCaughtUp(t, db, "w")
	for _, table := range []string{"event_outbox", "iu_route_attempt"} {
		part := partitionOf(t, db, table, txid)
		_, err := db.Pool.Exec(pgtest.Ctx(t), `DELETE FROM `+pgx.Identifier{part}.Sanitize())
		pgtest.RequireSQLState(t, err, "IU001")
		for _, p := range []string{part, table + "_legacy", table + "_default"} {
			_, err := db.Pool.Exec(pgtest.Ctx(t), `TRUNCATE `+pgx.Identifier{p}.Sanitize())
			pgtest.RequireSQLState(t, err, "IU001")
		}
	}
	_, err := db.Pool.Exec(pgtest.Ctx(t), `UPDATE event_outbox SET event_stream = 'x'`)
	pgtest.RequireSQLState(t, err, "IU001")
	// The rebase flag lets through only the DELETE half of moving a restored (foreign-txid)
	// row; an ordinary row stays undeletable with it set.
	c := db.Conn(t)
	if _, err := c.Exec(pgtest.Ctx(t), `SET iu.rebase_txid = 'on'`); err != nil {
		t.Fatal(err)
	}
	_, err = c.Exec(pgtest.Ctx(t), `DELETE FROM event_outbox`)
	pgtest.RequireSQLState(t, err, "IU001")
}

// fp is what the conversion must keep: every outbox row, every attempt (ids included),
// every dead letter, and every cursor, as text. A cursor's NULL columns are left out, so a
// column a later migration adds empty (015's group_name: the conversion test migrates up to
// the latest version) does not count as a change.
func fp(t *testing.T, db *pgtest.DB) [4]string {
	t.Helper()
	var f [4]string
	for i, q := range []string{
		`SELECT coalesce(md5(string_agg(to_jsonb(e)::text, ',' ORDER BY e.id)), '') FROM event_outbox e`,
		`SELECT coalesce(md5(string_agg(to_jsonb(a)::text, ',' ORDER BY a.id)), '') FROM iu_route_attempt a`,
		`SELECT coalesce(md5(string_agg(to_jsonb(d)::text, ',' ORDER BY d.id)), '') FROM iu_route_dead_letter d`,
		`SELECT coalesce(string_agg(jsonb_strip_nulls(to_jsonb(c))::text, ',' ORDER BY c.worker_name), '') FROM iu_route_worker_cursor c`,
	} {
		db.QueryRow(t, q, nil, &f[i])
	}
	return f
}

func relkind(t *testing.T, db *pgtest.DB, rel string) string {
	t.Helper()
	var k string
	db.QueryRow(t, `SELECT relkind::text FROM pg_class WHERE oid = $1::regclass`, []any{rel}, &k)
	return k
}

// Rule: converting a populated, unpartitioned install (the partitioning migration up) keeps every row
// and every cursor position — a worker stopped in the middle of a window resumes where it
// was, nothing missed, nothing twice — and its down gives the old unpartitioned tables back
// with every row (those written after the conversion too), on which the worker goes on.
func TestConversion_PopulatedInstallKeepsEveryRowAndCursor(t *testing.T) {
	t.Parallel()
	conversionKeepsEveryRowAndCursor(t, pgtest.NewDB(t))
}

func conversionKeepsEveryRowAndCursor(t *testing.T, db *pgtest.DB) {
	m, err := migrate.Open(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	downBeforeConversion(t, m)
	seed(t, db)
	db.Exec(t, `SELECT fn_iu_route_worker_register('w2')`)
	emit(t, db, "dry", 30)
	emit(t, db, "live", 1) // a failed attempt and a dead letter
	emit(t, db, "dry", 30)
	doc(t, db, `SELECT fn_iu_route_worker_run('w', 10)`) // w stops inside its window
	doc(t, db, `SELECT fn_iu_route_worker_run('w', 10)`)
	runUntilCaughtUp(t, db, "w2")
	// The NOTIFY bridge open, so its triggers (one with a transition table, which a
	// partition may not carry) exist and must move to the parent and back.
	db.Exec(t, `UPDATE dot_config SET value = 'true' WHERE key = 'queue.notify.bridge_enabled'`)
	triggers := func() string {
		var names string
		db.QueryRow(t, `SELECT coalesce(string_agg(tgname, ',' ORDER BY tgname), '') FROM pg_trigger
		                 WHERE tgrelid = 'event_outbox'::regclass AND NOT tgisinternal`, nil, &names)
		return names
	}
	triggersBefore := triggers()
	if !strings.Contains(triggersBefore, "notify") {
		t.Fatalf("the open bridge must have put its trigger on event_outbox: %s", triggersBefore)
	}
	before := fp(t, db)
	var windowOpen bool
	db.QueryRow(t, `SELECT window_snapshot IS NOT NULL AND window_txid IS NOT NULL FROM iu_route_worker_cursor WHERE worker_name = 'w'`, nil, &windowOpen)
	if !windowOpen || relkind(t, db, "event_outbox") != "r" {
		t.Fatalf("want an unpartitioned install with w inside an open window (window open %v, relkind %s)",
			windowOpen, relkind(t, db, "event_outbox"))
	}

	if _, err := m.Up(pgtest.Ctx(t)); err != nil {
		t.Fatalf("partitioning up on a populated install: %v", err)
	}
	if relkind(t, db, "event_outbox") != "p" || relkind(t, db, "iu_route_attempt") != "p" {
		t.Fatal("partitioning up: the tables are not partitioned")
	}
	if after := fp(t, db); after != before {
		t.Fatalf("the conversion changed rows or cursors:\nbefore %v\nafter  %v", before, after)
	}
	if n := scalar(t, db, `SELECT count(*) FROM ONLY event_outbox_legacy`); n != 61 {
		t.Fatalf("the old rows must be the legacy partition as they were: %d rows there, want 61", n)
	}
	emit(t, db, "dry", 4)
	if n := runUntilCaughtUp(t, db, "w"); n != 61-20+4 {
		t.Fatalf("w resumed and claimed %d, want %d (the rest of its window and the new events)", n, 61-20+4)
	}
	if n := runUntilCaughtUp(t, db, "w2"); n != 4 {
		t.Fatalf("w2 claimed %d after the conversion, want the 4 new events", n)
	}
	requireExactlyOnce(t, db, "w")
	requireExactlyOnce(t, db, "w2")

	mid := fp(t, db)
	downBeforeConversion(t, m)
	if relkind(t, db, "event_outbox") != "r" || relkind(t, db, "iu_route_attempt") != "r" {
		t.Fatal("partitioning down: the tables are still partitioned")
	}
	if after := fp(t, db); after != mid {
		t.Fatalf("partitioning down lost or changed rows:\nbefore %v\nafter  %v", mid, after)
	}
	if got := triggers(); got != triggersBefore {
		t.Fatalf("event_outbox triggers after down: %s, want its own back: %s", got, triggersBefore)
	}
	_, err = db.Pool.Exec(pgtest.Ctx(t), `DELETE FROM iu_route_attempt`)
	pgtest.RequireSQLState(t, err, "IU001")
	emit(t, db, "dry", 2)
	if n := runUntilCaughtUp(t, db, "w"); n != 2 {
		t.Fatalf("after down w claimed %d, want 2", n)
	}
	requireExactlyOnce(t, db, "w")
	if _, err := m.Up(pgtest.Ctx(t)); err != nil {
		t.Fatalf("partitioning up again: %v", err)
	}
}

// Rule: age counts from when a partition closed: younger than the configured days it is
// kept (younger_than_retention), older it goes; and attempts outlive their events — an
// attempt partition is kept while its events' partition is (events_still_kept), because
// the attempts are what makes a re-scan of those events write nothing twice.
func TestRetention_AgeAndAttemptsOutliveTheirEvents(t *testing.T) {
	t.Parallel()
	db := setup(t)
	keepForDays(t, db, "", "1") // events forever, attempts 1 day
	txid := emit(t, db, "dry", 2)
	po, pa := partitionOf(t, db, "event_outbox", txid), partitionOf(t, db, "iu_route_attempt", txid)
	burn(t, db, width+100)
	waitClosed(t, db, po)
	runUntilCaughtUp(t, db, "w")
	db.Exec(t, `UPDATE iu_history_partition SET closed_at = now() - interval '2 days' WHERE partition_name IN ($1, $2)`, po, pa)
	r := retention(t, db, false)
	if k := entries(r, "kept", pa); len(k) != 1 || k[0]["reason"] != "events_still_kept" {
		t.Fatalf("attempts must stay while their events stay: %v", r)
	}
	keepForDays(t, db, "3", "1")
	r = retention(t, db, false)
	if k := entries(r, "kept", po); len(k) != 1 || k[0]["reason"] != "younger_than_retention" {
		t.Fatalf("closed 2 days ago, retention 3 days: %s must stay: %v", po, r)
	}
	if k := entries(r, "kept", pa); len(k) != 1 || k[0]["reason"] != "events_still_kept" {
		t.Fatalf("%s must stay with its events: %v", pa, r)
	}
	keepForDays(t, db, "1", "1")
	r = retention(t, db, false)
	if len(entries(r, "dropped", po)) != 1 || len(entries(r, "dropped", pa)) != 1 {
		t.Fatalf("closed 2 days ago, retention 1 day: both go: %v", r)
	}
}

// Rule: nothing is lost when maintenance has not run, and the default partition holds
// rows only until maintenance runs again: inserts beyond the last partition land in the
// default partition and are routed as usual (their attempts in the attempt default
// partition, where a re-scan after a cursor reset still writes nothing twice); the next
// maintenance call makes the default partitions' rows a partition of their own without
// moving a row (the table is the same relation, renamed), leaves an empty default
// partition, and later events go to a regular partition.
func TestPartitions_DefaultPartitionCatchesWhatMaintenanceMissed(t *testing.T) {
	t.Parallel()
	defaultPartitionCatchesWhatMaintenanceMissed(t, setup(t))
}

func defaultPartitionCatchesWhatMaintenanceMissed(t *testing.T, db *pgtest.DB) {
	burn(t, db, 3*width) // no maintenance: the partitions run out
	txid := emitWithoutMaintenance(t, db, "dry", 3)
	if n := scalar(t, db, `SELECT count(*) FROM ONLY event_outbox_default`); n != 3 {
		t.Fatalf("beyond the last partition the events belong in event_outbox_default; %d there (txid %s)", n, txid)
	}
	if n := runUntilCaughtUp(t, db, "w"); n != 3 {
		t.Fatalf("events in the default partition: claimed %d, want 3", n)
	}
	if n := scalar(t, db, `SELECT count(*) FROM ONLY iu_route_attempt_default`); n != 3 {
		t.Fatalf("their attempts belong in iu_route_attempt_default; %d there", n)
	}
	db.Exec(t, `SELECT fn_iu_route_worker_reset_cursor('w')`)
	runUntilCaughtUp(t, db, "w")
	requireExactlyOnce(t, db, "w")
	var oid, ctids string
	db.QueryRow(t, `SELECT 'event_outbox_default'::regclass::oid::text, string_agg(ctid::text, ',' ORDER BY id) FROM ONLY event_outbox_default`, nil, &oid, &ctids)

	m := maintain(t, db)
	attached, _ := m["default_attached"].([]any)
	if len(attached) != 2 || m["behind"] != true {
		t.Fatalf("maintenance must make both default partitions' rows a partition of their own: %v", m)
	}
	if rows, _ := m["default_rows"].(map[string]any); rows == nil || rows["event_outbox"] != float64(0) || rows["iu_route_attempt"] != float64(0) {
		t.Fatalf("the default partitions must be empty after the call: %v", m)
	}
	p := partitionOf(t, db, "event_outbox", txid)
	var pOID, pCtids string
	db.QueryRow(t, `SELECT $1::regclass::oid::text, string_agg(ctid::text, ',' ORDER BY id) FROM event_outbox WHERE tableoid = $1::regclass`,
		[]any{p}, &pOID, &pCtids)
	if p != attached[0] || pOID != oid || pCtids != ctids {
		t.Fatalf("the rows must stay where they were (same relation %s, same ctids %s), now in %s (relation %s, ctids %s)", oid, ctids, p, pOID, pCtids)
	}
	if !strings.HasPrefix(partitionOf(t, db, "iu_route_attempt", txid), "iu_route_attempt_p") {
		t.Fatalf("the attempts' range must be a partition of iu_route_attempt too")
	}
	later := emit(t, db, "dry", 1)
	if p := partitionOf(t, db, "event_outbox", later); !strings.HasPrefix(p, "event_outbox_p") {
		t.Fatalf("after maintenance new events belong in a regular partition, got %q", p)
	}
	if n := scalar(t, db, `SELECT count(*) FROM ONLY event_outbox_default`) + scalar(t, db, `SELECT count(*) FROM ONLY iu_route_attempt_default`); n != 0 {
		t.Fatalf("the default partitions must stay empty, hold %d rows", n)
	}
	if n := runUntilCaughtUp(t, db, "w"); n != 1 {
		t.Fatalf("claimed %d, want 1", n)
	}
	db.Exec(t, `SELECT fn_iu_route_worker_reset_cursor('w')`) // a re-scan across the new partition writes nothing twice
	runUntilCaughtUp(t, db, "w")
	requireExactlyOnce(t, db, "w")
	// The new default partition is guarded like the first one.
	for _, d := range []string{"event_outbox_default", "iu_route_attempt_default"} {
		_, err := db.Pool.Exec(pgtest.Ctx(t), `TRUNCATE `+d)
		pgtest.RequireSQLState(t, err, "IU001")
	}
}

// Rule: maintenance is safe to call concurrently: while one call holds the maintenance
// lock, a second returns busy (after its 1 s bound) and creates nothing twice.
func TestPartitions_MaintenanceIsSafeConcurrently(t *testing.T) {
	t.Parallel()
	db := setup(t)
	c := db.Conn(t)
	tx, err := c.Begin(pgtest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(pgtest.Ctx(t))
	if _, err := tx.Exec(pgtest.Ctx(t), `SELECT fn_iu_partition_maintain()`); err != nil {
		t.Fatal(err)
	}
	if m := maintain(t, db); m["busy"] != true {
		t.Fatalf("a second maintenance while the first holds its lock must say busy: %v", m)
	}
	if err := tx.Commit(pgtest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	// Idempotent: called again it creates only what the txids used since need (other
	// tests share the cluster's txids, so "nothing" cannot be asserted), never a second
	// copy of a range: the ranges of each table never overlap.
	for i := 0; i < 3; i++ {
		if m := maintain(t, db); m["busy"] != false {
			t.Fatalf("a call after the lock was released: %v", m)
		}
	}
	if n := scalar(t, db, `
		SELECT count(*) FROM iu_history_partition a JOIN iu_history_partition b
		    ON a.table_name = b.table_name AND a.partition_name < b.partition_name
		   AND coalesce(a.lower_txid, '0') < b.upper_txid AND coalesce(b.lower_txid, '0') < a.upper_txid`); n != 0 {
		t.Fatalf("%d overlapping partition ranges", n)
	}
}

// Rule: maintenance racing a producer into the default partition never fails and never
// strands a row. With the partitions run out, a producer's open transaction has inserted
// into event_outbox_default: maintenance, which then needs the parents' locks, gives up
// within its bound instead of queueing producers behind it, answers lock_timeout naming the
// producer (blocked_by), and changes nothing; the producer commits; the next call makes the
// default's rows a partition and the row is routed once.
func TestPartitions_MaintenanceRacingAProducerIntoTheDefaultPartition(t *testing.T) {
	t.Parallel()
	db := setup(t)
	burn(t, db, 3*width) // no maintenance: the partitions run out
	prod := db.Conn(t)
	tx, err := prod.Begin(pgtest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	var txid string
	var pid int
	if err := tx.QueryRow(pgtest.Ctx(t), `INSERT INTO event_outbox (event_domain, event_type, event_stream)
	                                      VALUES ('iu', 'dry', 's') RETURNING txid::text, pg_backend_pid()`).Scan(&txid, &pid); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	m := maintain(t, db)
	took := time.Since(start)
	blocked, _ := m["blocked_by"].([]any)
	if m["lock_timeout"] != true || len(m["created"].([]any)) != 0 || len(blocked) == 0 {
		t.Fatalf("maintenance must give up, change nothing and say who held the lock: %v", m)
	}
	if b, _ := blocked[0].(map[string]any); b["pid"] != float64(pid) {
		t.Fatalf("blocked_by must name the producer (pid %d): %v", pid, blocked)
	}
	if took > 5*time.Second {
		t.Fatalf("maintenance took %v to give up", took)
	}
	if err := tx.Commit(pgtest.Ctx(t)); err != nil {
		t.Fatalf("the producer's commit after maintenance gave up: %v", err)
	}
	m = maintain(t, db)
	if len(m["default_attached"].([]any)) != 2 || len(m["created"].([]any)) == 0 {
		t.Fatalf("the next call must make the default's rows a partition and add partitions above: %v", m)
	}
	if where := partitionOf(t, db, "event_outbox", txid); !strings.HasPrefix(where, "event_outbox_p") {
		t.Fatalf("the raced row must be in a regular partition now, is in %q", where)
	}
	if n := runUntilCaughtUp(t, db, "w"); n != 1 {
		t.Fatalf("claimed %d, want the raced row", n)
	}
	requireExactlyOnce(t, db, "w")
}
