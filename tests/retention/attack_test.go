package retention

// Adversarial review of the partitioned history (issue 12): attacks by the callers the
// README's threat model names. Each test attempts one attack and states the rule it
// proves. Tests that fail on the code they were written against are findings for the lead.

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// loginIn creates a LOGIN role that is a member of group (empty: none) and connects as it.
func loginIn(t *testing.T, db *pgtest.DB, prefix, group string) (*pgx.Conn, string) {
	t.Helper()
	role := prefix + "_" + db.Name
	id := pgx.Identifier{role}.Sanitize()
	db.Exec(t, `CREATE ROLE `+id+` LOGIN PASSWORD 'pw'`)
	if group != "" {
		db.Exec(t, `GRANT `+group+` TO `+id)
	}
	t.Cleanup(func() {
		c := context.Background()
		_, _ = db.Pool.Exec(c, `DROP OWNED BY `+id)
		_, _ = db.Pool.Exec(c, `DROP ROLE IF EXISTS `+id)
	})
	return db.ConnAs(t, role, "pw"), role
}

// Rule: an executor cannot stall producers. fn_iu_partition_maintain is granted to
// dot_executor (the runner calls it); whatever an executor does with it (here: call it
// inside a transaction it keeps open while a partition is due), a producer's INSERT into
// event_outbox must not wait on a lock the executor holds.
//
// Not parallel: transaction ids are cluster-wide, and the package's other tests burn
// thousands of them. Burned while this test holds the maintenance open, they could carry
// the producer's txid past every committed partition into event_outbox_default, which the
// open maintenance (adding a partition beside the default one) rightly holds locked, and
// the test would then measure a precondition it no longer has. Run alone, only its own
// sessions consume txids: room stays for the producer's row in the current partition.
func TestAttack_ExecutorHoldingMaintenanceOpenStallsProducers(t *testing.T) {
	db := setup(t)
	exe, _ := loginIn(t, db, "exe", "dot_executor")
	// Burn until the room ahead is under two widths (a partition is due) but more than one
	// (maintenance stays ahead: it attaches above the txids in use without locking the
	// parents; far behind it locks them, and then a caller that keeps its transaction open
	// is ended after 2 s idle, which TestAttack_ExecutorHoldingBehindMaintenanceOpen holds).
	var room int
	db.QueryRow(t, `SELECT (max(upper_txid::text::numeric) - pg_snapshot_xmax(pg_current_snapshot())::text::numeric)::int
	                  FROM iu_history_partition`, nil, &room)
	if room > 2*width-300 {
		burn(t, db, room-(2*width-300))
	}

	tx, err := exe.Begin(pgtest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	var m []byte
	if err := tx.QueryRow(pgtest.Ctx(t), `SELECT fn_iu_partition_maintain()`).Scan(&m); err != nil {
		t.Fatalf("executor calling maintenance: %v", err)
	}
	t.Logf("executor's maintenance (transaction left open): %s", m)
	// The attack's premise: the open transaction holds a partition it created (and the
	// locks that took). Without one it would hold nothing a producer could wait on.
	var res struct {
		Created []string `json:"created"`
	}
	if err := json.Unmarshal(m, &res); err != nil || len(res.Created) == 0 {
		t.Fatalf("the executor's maintenance created no partition (err %v): the test's premise is gone: %s", err, m)
	}

	prod := db.Conn(t)
	if _, err := prod.Exec(pgtest.Ctx(t), `SET lock_timeout = '1s'`); err != nil {
		t.Fatal(err)
	}
	_, err = prod.Exec(pgtest.Ctx(t), `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 'dry', 's')`)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "55P03" {
		t.Fatalf("a producer's INSERT waited > 1 s on the lock an executor's open maintenance call holds on event_outbox: %v", err)
	}
	if err != nil {
		t.Fatalf("producer insert: %v", err)
	}
}

// Rule: a session holding the maintenance lock (any executor, in an open transaction)
// cannot hang fn_iu_retention_run: it answers within its own lock bound (2 s) instead of
// waiting for as long as that transaction lives.
func TestAttack_ExecutorHoldingMaintenanceLockHangsRetention(t *testing.T) {
	t.Parallel()
	db := setup(t)
	exe, _ := loginIn(t, db, "exe", "dot_executor")
	tx, err := exe.Begin(pgtest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(pgtest.Ctx(t), `SELECT fn_iu_partition_maintain()`); err != nil {
		t.Fatalf("executor calling maintenance: %v", err)
	}
	ctx, cancel := context.WithTimeout(pgtest.Ctx(t), 6*time.Second)
	defer cancel()
	start := time.Now()
	var raw []byte
	err = db.Pool.QueryRow(ctx, `SELECT fn_iu_retention_run(true)`).Scan(&raw)
	if err != nil && time.Since(start) >= 5*time.Second {
		t.Fatalf("fn_iu_retention_run waited %v on the maintenance lock an executor holds (still waiting when cancelled): %v",
			time.Since(start).Round(time.Millisecond), err)
	}
	if err != nil {
		t.Fatalf("fn_iu_retention_run: %v", err)
	}
}

// Rule: a producer that reuses the id of a committed, not yet routed event (learned from
// a NOTIFY payload, a downstream system, a log) cannot disturb that event's routing. The
// id is unique only per partition, so the reused id is stored when the two rows sit in
// different partitions; the original must still be routed exactly as it would be alone
// (its own failure: the delivery seam's 0A000, its own snapshot in the dead letter) and
// one idempotency key must never get two first attempts.
func TestAttack_ProducerReusesAnUnroutedEventIdInALaterPartition(t *testing.T) {
	t.Parallel()
	db := setup(t)
	prod, _ := loginIn(t, db, "prod", "")
	// What sql/README.md tells a DBA to grant a direct-INSERT producer.
	db.Exec(t, pgtest.ProducerInsertGrant(pgx.Identifier{"prod_" + db.Name}.Sanitize()))
	db.Exec(t, pgtest.ProducerExecuteGrant(pgx.Identifier{"prod_" + db.Name}.Sanitize()))

	var victim, victimTxid string
	db.QueryRow(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream, safe_payload)
	                VALUES ('iu', 'live', 's', '{"amount": 1}') RETURNING id::text, txid::text`, nil, &victim, &victimTxid)
	var dryVictim string
	db.QueryRow(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream)
	                VALUES ('iu', 'dry', 's') RETURNING id::text`, nil, &dryVictim)
	burn(t, db, 2*width)
	maintain(t, db)

	// The attacker: two rows carrying the victims' ids, in the current (later) partition.
	if _, err := prod.Exec(pgtest.Ctx(t), `
		INSERT INTO event_outbox (id, event_domain, event_type, event_stream, safe_payload)
		VALUES ($1::uuid, 'iu', 'live', 's', '{"amount": 1000000}'),
		       ($2::uuid, 'iu', 'dry', 's', '{}')`, victim, dryVictim); err != nil {
		// The defence: a producer granted as the README says has no INSERT on id.
		pgtest.RequireSQLState(t, err, "42501")
		return
	}
	t.Errorf("a producer granted as the README says stored rows under other events' ids")
	var n int
	db.QueryRow(t, `SELECT count(DISTINCT tableoid) FROM event_outbox WHERE id = $1::uuid`, []any{victim}, &n)
	t.Logf("rows with the victim's id live in %d partitions (victim txid %s)", n, victimTxid)

	runUntilCaughtUp(t, db, "w")

	var dupKeys int
	db.QueryRow(t, `SELECT count(*) FROM (SELECT idempotency_key FROM iu_route_attempt WHERE attempt_no = 1
	                 GROUP BY idempotency_key HAVING count(*) > 1) d`, nil, &dupKeys)
	var code, msg string
	db.QueryRow(t, `SELECT coalesce(error_code, ''), coalesce(error_message, '') FROM iu_route_attempt
	                 WHERE event_ref = $1::uuid AND route_key = 'r_live' ORDER BY id LIMIT 1`, []any{victim}, &code, &msg)
	var amount string
	db.QueryRow(t, `SELECT coalesce(event_snapshot->'safe_payload'->>'amount', '') FROM iu_route_dead_letter
	                 WHERE event_id = $1::uuid`, []any{victim}, &amount)
	if dupKeys != 0 {
		t.Errorf("%d idempotency keys have two first attempts (one per partition): the re-used id was routed as a new event", dupKeys)
	}
	if code != "0A000" {
		t.Errorf("the victim's delivery failed with %s %q instead of the seam's own 0A000: the reused id broke its routing", code, msg)
	}
	if amount != "1" {
		t.Errorf("the victim's dead letter carries payload amount %q, want the victim's 1", amount)
	}
}

// Rule: retention trusts a cursor only when it belongs to this cluster. After a
// dump/restore the stored done_snapshot comes from the old cluster and may lie ahead of
// every txid here: the worker refuses to run (IU002) until an operator re-anchors it, and
// until then it has passed nothing here, so nothing of its domain may be dropped.
func TestAttack_RetentionTrustsACursorFromAnotherCluster(t *testing.T) {
	t.Parallel()
	db := setup(t)
	keepForDays(t, db, "0", "0")
	old := emit(t, db, "dry", 3) // never routed
	po := partitionOf(t, db, "event_outbox", old)
	burn(t, db, width+100)
	waitClosed(t, db, po)

	// The cursor as a restore from a cluster 10^9 txids further on leaves it.
	db.Exec(t, `UPDATE iu_route_worker_cursor SET done_snapshot = '1000000000:1000000000:' WHERE worker_name = 'w'`)
	_, err := db.Pool.Exec(pgtest.Ctx(t), `SELECT fn_iu_route_worker_run('w', 100)`)
	pgtest.RequireSQLState(t, err, "IU002")

	r := retention(t, db, false)
	if !exists(t, db, po) {
		t.Fatalf("%s (3 events never routed) was dropped on the word of a cursor the worker itself refuses as foreign (IU002): %v", po, r)
	}
}

// Rule: an operator cannot stall producers with fn_iu_retention_run for long. Dropping a
// partition locks the parent ACCESS EXCLUSIVE until the run's transaction ends; a run that
// dropped something ends its session once it sits idle in that transaction for 2 s, so
// an operator (or a script) that leaves the transaction open holds producers about that
// long, and the drops roll back (the next run makes them again).
func TestAttack_AdminHoldingRetentionOpenStallsProducers(t *testing.T) {
	t.Parallel()
	db := setup(t)
	keepForDays(t, db, "0", "0")
	admin, _ := loginIn(t, db, "adm", "workflow_admin")
	old := emit(t, db, "dry", 2)
	po := partitionOf(t, db, "event_outbox", old)
	runUntilCaughtUp(t, db, "w")
	burn(t, db, width+100)
	waitClosed(t, db, po)
	maintain(t, db)

	tx, err := admin.Begin(pgtest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	var m []byte
	if err := tx.QueryRow(pgtest.Ctx(t), `SELECT fn_iu_retention_run(false)`).Scan(&m); err != nil {
		t.Fatalf("operator's retention run: %v", err)
	}
	t.Logf("operator's retention run (transaction left open): %s", m)

	prod := db.Conn(t)
	if _, err := prod.Exec(pgtest.Ctx(t), `SET lock_timeout = '6s'`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = prod.Exec(pgtest.Ctx(t), `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 'dry', 's')`)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "55P03" {
		t.Fatalf("a producer's INSERT waited > 6 s on the lock an operator's open retention run holds on event_outbox: %v", err)
	}
	if err != nil {
		t.Fatalf("producer insert: %v", err)
	}
	t.Logf("the producer waited %s", time.Since(start).Round(time.Millisecond))
	// The operator's session was ended and its drops rolled back: the partition is still there.
	if n := scalar(t, db, `SELECT count(*) FROM pg_class WHERE relname = '`+po+`'`); n != 1 {
		t.Fatalf("%s: the drops of the ended session must have rolled back", po)
	}
}

// Rule: the dead letter of an event carries THAT event, whatever another row claims. Here
// the victim sits in the default partition (maintenance had fallen behind) and a producer
// reuses its id in the regular partition maintenance adds above it: an operator's replay
// must never deliver the producer's payload under the victim's identity.
func TestAttack_ReusedIdPutsTheForgedPayloadInTheVictimsDeadLetter(t *testing.T) {
	t.Parallel()
	db := setup(t)
	prod, role := loginIn(t, db, "prod", "")
	// More than the README advises (INSERT on every column, id included): the routing must
	// hold even then.
	db.Exec(t, `GRANT INSERT ON event_outbox TO `+pgx.Identifier{role}.Sanitize())
	db.Exec(t, pgtest.ProducerExecuteGrant(pgx.Identifier{role}.Sanitize()))

	burn(t, db, 3*width) // no maintenance: the next events land in event_outbox_default
	var victim string
	db.QueryRow(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream, safe_payload)
	                VALUES ('iu', 'live', 's', '{"amount": 1}') RETURNING id::text`, nil, &victim)
	if n := scalar(t, db, `SELECT count(*) FROM ONLY event_outbox_default WHERE id = $1::uuid`, victim); n != 1 {
		t.Fatalf("the victim should sit in the default partition")
	}
	maintain(t, db) // a regular partition above the default's rows
	if _, err := prod.Exec(pgtest.Ctx(t), `
		INSERT INTO event_outbox (id, event_domain, event_type, event_stream, safe_payload)
		VALUES ($1::uuid, 'iu', 'live', 's', '{"amount": 1000000}')`, victim); err != nil {
		t.Logf("the reused id was refused (the defence holds): %v", err)
		return
	}
	runUntilCaughtUp(t, db, "w")
	var amount string
	db.QueryRow(t, `SELECT coalesce(event_snapshot->'safe_payload'->>'amount', '') FROM iu_route_dead_letter
	                 WHERE event_id = $1::uuid`, []any{victim}, &amount)
	if amount != "1" {
		t.Fatalf("the victim's dead letter carries payload amount %q, want the victim's 1: a replay would deliver the producer's forgery", amount)
	}
}

// Rule: maintenance adds partitions while the NOTIFY bridge is open (its statement
// trigger with a transition table sits on the parent), and an insert into a new partition
// still wakes a listener.
func TestPartitions_AddedWhileTheNotifyBridgeIsOpen(t *testing.T) {
	t.Parallel()
	db := setup(t)
	db.Exec(t, `UPDATE dot_config SET value = 'true' WHERE key = 'queue.notify.bridge_enabled'`)
	burn(t, db, 2*width)
	if m := maintain(t, db); len(m["created"].([]any)) == 0 {
		t.Fatalf("maintenance created nothing: %v", m)
	}
	l := db.Conn(t)
	if _, err := l.Exec(pgtest.Ctx(t), `LISTEN queue_wake_iu`); err != nil {
		t.Fatal(err)
	}
	txid := emit(t, db, "dry", 1)
	if p := partitionOf(t, db, "event_outbox", txid); p == "" {
		t.Fatalf("no partition holds txid %s", txid)
	}
	ctx, cancel := context.WithTimeout(pgtest.Ctx(t), 5*time.Second)
	defer cancel()
	if _, err := l.WaitForNotification(ctx); err != nil {
		t.Fatalf("no wake-up for an insert into a partition added while the bridge was open: %v", err)
	}
}

// Rule (issue 21, owned here): the partition-maintenance lock is the package's own. A
// login that takes the advisory lock maintenance used to take (hashtext of
// 'iu_core.partition_maintain': any login can take any advisory lock) no longer stalls
// maintenance or retention, and the lock maintenance takes now cannot be taken by a login
// of no role (it cannot even name the table).
func TestAttack_AnyLoginHoldingTheMaintenanceLock(t *testing.T) {
	t.Parallel()
	db := setup(t)
	nobody, _ := loginIn(t, db, "nobody", "")
	tx, err := nobody.Begin(pgtest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(pgtest.Ctx(t), `SELECT pg_advisory_xact_lock(hashtext('iu_core.partition_maintain'))`); err != nil {
		t.Fatal(err)
	}
	if m := maintain(t, db); m["busy"] != false {
		t.Fatalf("a login holding the old advisory key stalls maintenance: %v", m)
	}
	if r := retention(t, db, true); r["busy"] != false {
		t.Fatalf("a login holding the old advisory key stalls retention: %v", r)
	}
	if _, err := tx.Exec(pgtest.Ctx(t), `SAVEPOINT s`); err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(pgtest.Ctx(t), `LOCK TABLE iu_core.iu_history_lock IN SHARE UPDATE EXCLUSIVE MODE NOWAIT`)
	pgtest.RequireSQLState(t, err, "42501")
}

// Rule (issue 21, owned here): whoever holds the partition-maintenance lock is named. An
// executor that called maintenance in a transaction it keeps open (the only way left to
// hold it) makes maintenance answer busy and retention busy after its 2 s bound, both with
// holder {pid, login}, and v_queue_health's history row says lock_held with the holder in
// its detail, at once (the holder sits idle in its transaction: nobody is working under
// that lock).
func TestAttack_ExecutorHoldingTheMaintenanceLockIsNamed(t *testing.T) {
	t.Parallel()
	db := setup(t)
	exe, role := loginIn(t, db, "exe", "dot_executor")
	// The premise: the executor's call only takes the lock and leaves its transaction open.
	// Had it changed something (a partition fell due meanwhile: the package's other tests
	// consume txids of the same cluster), its session would be ended after 2 s idle in that
	// transaction, as maintenance arranges for such a caller, and the lock would go with it;
	// then it is rolled back and the premise taken again, a bounded number of times.
	var tx pgx.Tx
	var pid int
	for try := 0; ; try++ {
		maintain(t, db) // nothing left to do: the executor's call below only takes the lock
		var err error
		if tx, err = exe.Begin(pgtest.Ctx(t)); err != nil {
			t.Fatal(err)
		}
		var changed bool
		if err := tx.QueryRow(pgtest.Ctx(t), `SELECT pg_backend_pid(),
		            coalesce(jsonb_array_length(m->'created') + jsonb_array_length(m->'default_attached') + jsonb_array_length(m->'recut') > 0, true)
		       FROM (SELECT fn_iu_partition_maintain() AS m) s`).Scan(&pid, &changed); err != nil {
			t.Fatal(err)
		}
		if !changed {
			break
		}
		tx.Rollback(pgtest.Ctx(t))
		if try == 3 {
			t.Fatal("premise: the executor's maintenance call changed something on every try")
		}
	}
	defer tx.Rollback(context.Background())
	named := func(what string, h any) {
		t.Helper()
		hm, _ := h.(map[string]any)
		if hm == nil || hm["pid"] != float64(pid) || hm["login"] != role {
			t.Fatalf("%s must name the holder (pid %d, login %s): %v", what, pid, role, h)
		}
	}
	m := maintain(t, db)
	if m["busy"] != true {
		t.Fatalf("maintenance while an executor holds its lock: %v", m)
	}
	named("maintenance's busy answer", m["holder"])
	start := time.Now()
	r := retention(t, db, false)
	if r["busy"] != true || time.Since(start) > 4*time.Second {
		t.Fatalf("retention must answer busy within its 2 s bound (took %v): %v", time.Since(start), r)
	}
	named("retention's busy answer", r["holder"])
	var hint string
	var detail []byte
	db.QueryRow(t, `SELECT status_hint, detail::text FROM v_queue_health WHERE source = 'history'`, nil, &hint, &detail)
	var d map[string]any
	if err := json.Unmarshal(detail, &d); err != nil {
		t.Fatal(err)
	}
	if hint != "lock_held" {
		t.Fatalf("v_queue_health's history row: status_hint %q, want lock_held: %s", hint, detail)
	}
	named("v_queue_health's history row", d["maintenance_lock_holder"])
	if err := tx.Commit(pgtest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	db.QueryRow(t, `SELECT status_hint FROM v_queue_health WHERE source = 'history'`, nil, &hint)
	if hint != "ok" {
		t.Fatalf("the holder is gone: status_hint %q, want ok", hint)
	}
}

// Rule: far behind (the partitions about to run out), maintenance locks the parents; an
// executor that keeps such a call's transaction open holds producers only until its
// session is ended, 2 s idle in that transaction, and its changes roll back (the next call
// makes them again): a producer's INSERT waits about that long, and goes through.
//
// On a cluster of its own: it steers the next transaction id to 300 below the partitions'
// end, which other tests' transactions on the shared cluster would carry past.
func TestAttack_ExecutorHoldingBehindMaintenanceOpen(t *testing.T) {
	t.Parallel()
	db := privateDB(t, width)
	exe, _ := loginIn(t, db, "exe", "dot_executor")
	var room int
	db.QueryRow(t, `SELECT (max(upper_txid::text::numeric) - pg_snapshot_xmax(pg_current_snapshot())::text::numeric)::int
	                  FROM iu_history_partition`, nil, &room)
	if room > 300 {
		burn(t, db, room-300) // within maintenance's margin: it locks the parents
	}
	tx, err := exe.Begin(pgtest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	var raw []byte
	if err := tx.QueryRow(pgtest.Ctx(t), `SELECT fn_iu_partition_maintain()`).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m["behind"] != true || len(m["created"].([]any)) == 0 {
		t.Fatalf("premise: the executor's call locked the parents and created partitions: %s", raw)
	}
	prod := db.Conn(t)
	if _, err := prod.Exec(pgtest.Ctx(t), `SET lock_timeout = '6s'`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := prod.Exec(pgtest.Ctx(t), `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 'dry', 's')`); err != nil {
		t.Fatalf("producer insert behind an executor's open maintenance: %v", err)
	}
	waited := time.Since(start)
	t.Logf("the producer waited %v", waited.Round(time.Millisecond))
	if waited > 4*time.Second {
		t.Fatalf("the producer waited %v: the executor's idle session must be ended after 2 s", waited)
	}
	if err := tx.Commit(context.Background()); err == nil {
		t.Fatal("the executor's session should have been ended (idle in transaction)")
	}
	if created := m["created"].([]any); exists(t, db, created[0].(string)) {
		t.Fatalf("the ended session's partitions must have rolled back: %s exists", created[0])
	}
	if c := maintain(t, db)["created"].([]any); len(c) == 0 {
		t.Fatal("the next call must make them again")
	}
}
