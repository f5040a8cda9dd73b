package store

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// The contract tests run the real SQL and decode what it returns strictly into the
// structs of this package: a key the SQL emits that a struct does not declare fails, and
// so does a key a struct requires that the SQL does not emit. When one fails after a SQL
// change, the fix is one field (or one tag) in worker_run.go, stale_check.go, reap.go or
// queue_health.go.

// contractDB is a migrated database with a route worker registered, routes for each
// outcome and both gates open.
func contractDB(t *testing.T) *pgtest.DB {
	t.Helper()
	db := pgtest.NewDB(t)
	db.Exec(t, `
		INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'dry'), ('iu', 'live'), ('iu', 'none');
		INSERT INTO iu_outbound_route (event_domain, event_type, event_stream, route_key, enabled, dry_run) VALUES
			('iu', 'dry',  's', 'r_dry',  true, true),
			('iu', 'live', 's', 'r_live', true, false);
		UPDATE dot_config SET value = 'true' WHERE key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled');`)
	db.Exec(t, `SELECT fn_iu_route_worker_register('w')`)
	return db
}

// callJSON runs a statement returning one jsonb value and returns it as text.
func callJSON(t *testing.T, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, sql string, args ...any) []byte {
	t.Helper()
	var raw string
	if err := q.QueryRow(pgtest.Ctx(t), sql, args...).Scan(&raw); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return []byte(raw)
}

const runSQL = `SELECT fn_iu_route_worker_run('w', 100)::text`

// Contract: every shape of the fn_iu_route_worker_run summary (ran, with a transaction
// holding the window open and a dead letter; gated; busy) decodes strictly into WorkerRun.
func TestContract_WorkerRunSummary(t *testing.T) {
	t.Parallel()
	db := contractDB(t)
	ctx := pgtest.Ctx(t)

	// A transaction with a transaction id stays open: the run's window is held open by it.
	holder := db.Conn(t)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil {
		t.Fatal(err)
	}
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream)
	            SELECT 'iu', t, 's' FROM unnest(ARRAY['dry', 'dry', 'live', 'none']) t`)

	ran, err := parseWorkerRun(callJSON(t, db.Pool, runSQL), strict)
	if err != nil {
		t.Fatalf("ran: %v", err)
	}
	if ran.Claimed != 4 || ran.DryRun != 2 || ran.Failed != 1 || ran.Skipped != 1 || ran.DeadLettered != 1 ||
		ran.EventDomain != "iu" || ran.BatchLimit != 100 || ran.RunAt.IsZero() {
		t.Fatalf("ran: decoded %+v from %s", ran, ran.Raw)
	}
	if ran.HeldOpenCount < 1 || len(ran.HeldOpenBy) < 1 || ran.HeldOpenBy[0].PID == nil || ran.HeldOpenBy[0].TxID == "" {
		t.Fatalf("ran: the open transaction is not named as holding the window: %s", ran.Raw)
	}

	// The cursor keeps the same document as its last_run_summary.
	stored, err := parseWorkerRun(callJSON(t, db.Pool, `SELECT last_run_summary::text FROM iu_route_worker_cursor WHERE worker_name = 'w'`), strict)
	if err != nil || stored.Claimed != 4 {
		t.Fatalf("last_run_summary: %+v %v", stored, err)
	}

	// busy: another session runs the worker in an open transaction (holding its lock).
	other := db.Conn(t)
	otx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := otx.Exec(ctx, runSQL); err != nil {
		t.Fatal(err)
	}
	busy, err := parseWorkerRun(callJSON(t, db.Pool, runSQL), strict)
	_ = otx.Rollback(ctx)
	if err != nil || !busy.Busy || busy.Reason == "" || len(busy.LockHeldBy) != 1 || busy.LockHeldBy[0].PID == 0 || busy.LockHeldBy[0].Usename == nil {
		t.Fatalf("busy: %+v %v", busy, err)
	}

	db.Exec(t, `UPDATE dot_config SET value = 'false' WHERE key = 'iu_core.route_worker_enabled'`)
	gated, err := parseWorkerRun(callJSON(t, db.Pool, runSQL), strict)
	if err != nil || !gated.Gated || gated.Gates == nil || !gated.Gates.RoutesEnabled || gated.Gates.RouteWorkerEnabled {
		t.Fatalf("gated: %+v %v", gated, err)
	}
}

// Contract: fn_queue_stale_check decodes strictly into StaleCheck, with a silent alert
// entry (a stale executor) and a recovery entry (the executor beats again).
func TestContract_StaleCheck(t *testing.T) {
	t.Parallel()
	db := contractDB(t)
	db.Exec(t, `SELECT fn_queue_heartbeat_register('ex', 'external_worker', ARRAY['iu'], 60, 180)`)
	db.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now() - interval '1 hour' WHERE executor_id = 'ex'`)

	first, err := parseStaleCheck(callJSON(t, db.Pool, `SELECT fn_queue_stale_check()::text`), strict)
	if err != nil {
		t.Fatal(err)
	}
	if first.Stale != 1 || first.Emitted != 1 || len(first.Alerts) != 1 || first.Alerts[0].Alert != "first" ||
		first.Alerts[0].Severity != "critical" || first.Alerts[0].EventID == "" || first.CheckedAt.IsZero() {
		t.Fatalf("silent alert: decoded %+v from %s", first, first.Raw)
	}

	db.Exec(t, `SELECT fn_queue_heartbeat_tick('ex', 'external_worker', 'ok', '{}')`)
	again, err := parseStaleCheck(callJSON(t, db.Pool, `SELECT fn_queue_stale_check()::text`), strict)
	if err != nil {
		t.Fatal(err)
	}
	if again.Recovered != 1 || len(again.Alerts) != 1 || !again.Alerts[0].Recovered || again.Alerts[0].Severity != "info" {
		t.Fatalf("recovery: decoded %+v from %s", again, again.Raw)
	}

	// Contended: another session keeps a check's transaction open over a stale executor.
	db.Exec(t, `SELECT fn_queue_heartbeat_register('ey', 'external_worker', ARRAY['iu'], 60, 180)`)
	db.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now() - interval '1 hour' WHERE executor_id = 'ey'`)
	tx, err := db.Conn(t).Begin(pgtest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(pgtest.Ctx(t)) //nolint:errcheck
	callJSON(t, tx, `SELECT fn_queue_stale_check()::text`)
	held, err := parseStaleCheck(callJSON(t, db.Pool, `SELECT fn_queue_stale_check()::text`), strict)
	if err != nil {
		t.Fatal(err)
	}
	if held.Contended != 1 || len(held.BlockedBy) != 1 || held.BlockedBy[0].PID == 0 || held.BlockedBy[0].Usename == nil ||
		len(held.Alerts) != 1 || !held.Alerts[0].Contended {
		t.Fatalf("contended: decoded %+v from %s", held, held.Raw)
	}
}

// Contract: fn_job_reap_expired_leases decodes strictly into Reap, with one job requeued
// and one dead-lettered.
func TestContract_Reap(t *testing.T) {
	t.Parallel()
	db := contractDB(t)
	db.Exec(t, `SELECT fn_job_enqueue('again', 'iu', '{}', now(), NULL, 5)`)
	db.Exec(t, `SELECT fn_job_enqueue('once', 'iu', '{}', now(), NULL, 1)`)
	db.Exec(t, `SELECT count(*) FROM fn_job_claim('w1', '{again,once}', 2, 60)`)
	db.Exec(t, `UPDATE job_queue SET lease_expires_at = now() - interval '1 second' WHERE status = 'running'`)
	r, err := parseReap(callJSON(t, db.Pool, `SELECT fn_job_reap_expired_leases()::text`), strict)
	if err != nil {
		t.Fatal(err)
	}
	if r.Reaped != 2 || r.Requeued != 1 || r.DeadLettered != 1 {
		t.Fatalf("decoded %+v from %s", r, r.Raw)
	}
}

// Contract: v_queue_health scans by column name into QueueHealthRow, with a row of every
// source the view has.
func TestContract_QueueHealth(t *testing.T) {
	t.Parallel()
	db := contractDB(t)
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 'live', 's')`)
	// one route dead letter, then one event left as backlog
	callJSON(t, db.Pool, runSQL)
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 'dry', 's')`)
	db.Exec(t, `SELECT fn_queue_heartbeat_register('ex', 'external_worker', ARRAY['iu'], 60, 180)`)
	db.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now() - interval '1 hour' WHERE executor_id = 'ex'`)
	db.Exec(t, `SELECT fn_job_enqueue('queued', 'iu')`)
	db.Exec(t, `SELECT fn_job_enqueue('once', 'iu', '{}', now(), NULL, 1)`)
	db.Exec(t, `SELECT count(*) FROM fn_job_claim('w1', '{once}', 1, 60)`)
	db.Exec(t, `UPDATE job_queue SET lease_expires_at = now() - interval '1 second' WHERE status = 'running'`)
	db.Exec(t, `SELECT fn_job_reap_expired_leases()`) // one job dead letter

	rows, err := LoadQueueHealth(pgtest.Ctx(t), db.Pool)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]QueueHealthRow{}
	for _, r := range rows {
		seen[r.Source+"/"+r.Subject] = r
	}
	cur, hb, dle, dlj, q := seen["cursor/w"], seen["heartbeat/ex"], seen["dead_letter_event/iu"], seen["dead_letter_job/once"], seen["backlog_job_queue/queued"]
	switch {
	case cur.Backlog == nil || *cur.Backlog != 1 || cur.StatusHint != "backlog":
		t.Fatalf("cursor row: %+v", cur)
	case hb.StatusHint != "stale" || hb.Severity == nil || *hb.Severity != "critical" || hb.GapRatio == nil || hb.StaleThresholdSeconds == nil:
		t.Fatalf("heartbeat row: %+v", hb)
	case dle.DeadLettered == nil || *dle.DeadLettered != 1 || dle.StatusHint != "open":
		t.Fatalf("dead_letter_event row: %+v", dle)
	case dlj.DeadLettered == nil || *dlj.DeadLettered != 1 || dlj.StatusHint != "open":
		t.Fatalf("dead_letter_job row: %+v", dlj)
	case q.Backlog == nil || *q.Backlog != 1 || q.StatusHint != "queued" || len(q.Detail) == 0:
		t.Fatalf("backlog_job_queue row: %+v", q)
	}
}

// Contract: a key the SQL renames fails the decode, in every document; the proof edits the
// installed function (CREATE OR REPLACE with one key renamed) or the view (a column
// renamed) in this test's own database and reads them again.
func TestContract_SQLRenameIsCaught(t *testing.T) {
	t.Parallel()
	db := contractDB(t)
	// renameQuoted renames key where fn writes it between quote (a ' for a SQL literal, a "
	// for a key inside JSON text the function builds).
	renameQuoted := func(fn, key, quote string) {
		t.Helper()
		var def string
		db.QueryRow(t, `SELECT pg_get_functiondef($1::regprocedure)`, []any{fn}, &def)
		if !strings.Contains(def, quote+key+quote) {
			t.Fatalf("%s does not emit %q", fn, key)
		}
		db.Exec(t, strings.ReplaceAll(def, quote+key+quote, quote+key+"_renamed"+quote))
	}
	rename := func(fn, key string) { t.Helper(); renameQuoted(fn, key, "'") }

	rename("fn_job_reap_expired_leases()", "requeued")
	if _, err := parseReap(callJSON(t, db.Pool, `SELECT fn_job_reap_expired_leases()::text`), strict); err == nil || !strings.Contains(err.Error(), "requeued") {
		t.Errorf("reap with requeued renamed: err = %v", err)
	}
	rename("fn_queue_stale_check()", "skipped_locked")
	if _, err := parseStaleCheck(callJSON(t, db.Pool, `SELECT fn_queue_stale_check()::text`), strict); err == nil || !strings.Contains(err.Error(), "skipped_locked") {
		t.Errorf("stale-check with skipped_locked renamed: err = %v", err)
	}
	// even the lenient runner fails on a renamed key: it is missing
	if _, err := ParseStaleCheck(callJSON(t, db.Pool, `SELECT fn_queue_stale_check()::text`)); err == nil {
		t.Error("the runner read a stale-check whose skipped_locked was renamed")
	}
	// the run's summary is built in one place for its idle path and its full pass: the
	// counts as JSON text (fn_iu_route_worker_summary_counts), the rest in the summary
	renameQuoted("iu_core.fn_iu_route_worker_summary_counts(iu_core.iu_route_run_tally,boolean,integer,integer,text,boolean)", "already_attempted", `"`)
	if _, err := parseWorkerRun(callJSON(t, db.Pool, runSQL), strict); err == nil || !strings.Contains(err.Error(), "already_attempted") {
		t.Errorf("run with already_attempted renamed: err = %v", err)
	}
	// the holders' keys are JSON text joined to the counts (so an idle run folds them too)
	renameQuoted("iu_core.fn_iu_route_worker_summary(text,text,integer,iu_core.iu_route_run_tally,boolean,integer,integer,text,boolean,jsonb)", "held_open_count", `"`)
	if _, err := parseWorkerRun(callJSON(t, db.Pool, runSQL), strict); err == nil || !strings.Contains(err.Error(), "held_open_count") {
		t.Errorf("run with held_open_count renamed: err = %v", err)
	}
	db.Exec(t, `ALTER VIEW v_queue_health RENAME COLUMN backlog TO backlog_events`)
	if _, err := LoadQueueHealth(pgtest.Ctx(t), db.Pool); err == nil || !strings.Contains(err.Error(), "backlog") {
		t.Errorf("v_queue_health with backlog renamed: err = %v", err)
	}
}

// Contract: fn_iu_partition_maintain decodes strictly into PartitionMaintenance in both
// shapes: done (partitions reach past the next txid, nothing in the default partitions) and
// busy (another session holds the maintenance lock, and the answer names it).
func TestContract_PartitionMaintenance(t *testing.T) {
	t.Parallel()
	db := contractDB(t)
	p, err := parsePartitionMaintenance(callJSON(t, db.Pool, `SELECT fn_iu_partition_maintain()::text`), strict)
	if err != nil {
		t.Fatal(err)
	}
	if p.Busy || p.DefaultRows == nil || p.DefaultRowsLeft() || p.AheadTxids <= 0 || p.Partitions < 2 {
		t.Fatalf("done shape: decoded %+v from %s", p, p.Raw)
	}
	tx, err := db.Pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(context.Background(), `SELECT fn_iu_partition_maintain()`); err != nil { // holds the maintenance lock
		t.Fatal(err)
	}
	busy, err := parsePartitionMaintenance(callJSON(t, db.Pool, `SELECT fn_iu_partition_maintain()::text`), strict)
	if err != nil {
		t.Fatal(err)
	}
	if !busy.Busy || busy.Holder == nil || busy.Holder.Pid == nil || busy.Holder.Login == nil || busy.Outcome() != "busy" {
		t.Fatalf("busy shape (with the holder named): decoded %+v from %s", busy, busy.Raw)
	}
}

// Contract: a maintenance call that could not have the tables' locks decodes strictly,
// with blocked_by naming who held them (here a session holding event_outbox while the
// width change makes maintenance re-cut the partitions ahead, which needs the parents).
func TestContract_PartitionMaintenanceLockTimeout(t *testing.T) {
	t.Parallel()
	db := contractDB(t)
	db.Exec(t, `UPDATE dot_config SET value = '1000' WHERE key = 'retention.partition_txids'`)
	tx, err := db.Pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(context.Background(), `LOCK TABLE event_outbox IN ACCESS SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	p, err := parsePartitionMaintenance(callJSON(t, db.Pool, `SELECT fn_iu_partition_maintain()::text`), strict)
	if err != nil {
		t.Fatal(err)
	}
	if !p.LockTimeout || len(p.BlockedBy) == 0 || p.BlockedBy[0].Pid == nil || p.Outcome() != "lock_timeout" {
		t.Fatalf("lock_timeout shape: decoded %+v from %s", p, p.Raw)
	}
}

// Contract: fn_iu_retention_run(false) decodes strictly into RetentionRun in both shapes:
// done (nothing configured: everything kept with its reason) and busy (another session
// holds the maintenance lock, named in holder).
func TestContract_RetentionRun(t *testing.T) {
	t.Parallel()
	db := contractDB(t)
	r, err := parseRetentionRun(callJSON(t, db.Pool, `SELECT fn_iu_retention_run(false)::text`), strict)
	if err != nil {
		t.Fatal(err)
	}
	if r.Busy || r.DryRun || len(r.Dropped) != 0 || len(r.Kept) == 0 || r.Kept[0].Reason != "retention_not_configured" || r.Outcome() != "ok" {
		t.Fatalf("done shape: decoded %+v from %s", r, r.Raw)
	}
	tx, err := db.Pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	// (maintenance first with autocommit: a call that changes nothing holds only its lock,
	// and its session is not ended when it then sits idle in the transaction)
	callJSON(t, db.Pool, `SELECT fn_iu_partition_maintain()::text`)
	if _, err := tx.Exec(context.Background(), `SELECT fn_iu_partition_maintain()`); err != nil {
		t.Fatal(err)
	}
	busy, err := parseRetentionRun(callJSON(t, db.Pool, `SELECT fn_iu_retention_run(false)::text`), strict)
	if err != nil {
		t.Fatal(err)
	}
	if !busy.Busy || busy.Holder == nil || busy.Holder.Pid == nil || busy.Outcome() != "busy" {
		t.Fatalf("busy shape: decoded %+v from %s", busy, busy.Raw)
	}
}

// Contract: fn_queue_runner_beat decodes strictly into RunnerBeat in both shapes: beat (the
// first beat creates the row; a release hands it back) and held (another runner process
// holds the row), whose held_by names the holder.
func TestContract_RunnerBeat(t *testing.T) {
	t.Parallel()
	db := contractDB(t)
	const beatSQL = `SELECT fn_queue_runner_beat('iu-runner:c', $1::uuid, 'ok', '{"pid": 42, "host": "h"}', $2)::text`
	a, b := "00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"
	first, err := parseRunnerBeat(callJSON(t, db.Pool, beatSQL, a, false), strict)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Beat || first.Held || !first.Created || first.RegisteredVia != "runner" || first.LastBeatAt == nil || first.OwnerRole == "" {
		t.Fatalf("beat shape: decoded %+v from %s", first, first.Raw)
	}
	held, err := parseRunnerBeat(callJSON(t, db.Pool, beatSQL, b, false), strict)
	if err != nil {
		t.Fatal(err)
	}
	if held.Beat || !held.Held || held.HeldBy == nil || held.HeldBy.Instance != a || held.HeldBy.PID == nil || *held.HeldBy.PID != 42 ||
		held.HeldBy.Host == nil || *held.HeldBy.Host != "h" || held.HeldBy.FreeAt.IsZero() {
		t.Fatalf("held shape: decoded %+v from %s", held, held.Raw)
	}
	released, err := parseRunnerBeat(callJSON(t, db.Pool, beatSQL, a, true), strict)
	if err != nil || !released.Released {
		t.Fatalf("release: %+v, %v", released, err)
	}
}
