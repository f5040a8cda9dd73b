package routeworker

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/metrics"
	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule (issue 21): every lock holder is named. Any login may take a route worker's advisory
// lock, no grant needed (pg_advisory_lock(26997, <lock_id>)); then every run answers busy.
// Before, that session appeared nowhere: not in the busy answer, not in
// fn_iu_route_worker_health (held_open_by names window holders only), not in v_queue_health.
// Now all three name it (pid and login), and fn_iu_route_worker_reset_cursor, which waited
// for the lock with no timeout at all, gives up after 5 s with 55P03 naming it.
func TestIssue21_AWorkersLockHolderIsNamed(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	db.Exec(t, `SELECT fn_iu_route_worker_register('w_lock')`)
	nobody, pid, role := holdWorkerLock(t, db, "w_lock")
	named := func(what string, holders any) {
		t.Helper()
		list, _ := holders.([]any)
		if len(list) != 1 {
			t.Fatalf("%s: want the one holder, got %v", what, holders)
		}
		h := list[0].(map[string]any)
		if h["pid"] != pid || h["usename"] != role {
			t.Fatalf("%s: holder %v, want pid %v login %s", what, h, pid, role)
		}
	}
	var run, health map[string]any
	db.QueryRow(t, `SELECT fn_iu_route_worker_run('w_lock')`, nil, &run)
	if run["busy"] != true {
		t.Fatalf("run: %v", run)
	}
	named("the busy run", run["lock_held_by"])
	db.QueryRow(t, `SELECT fn_iu_route_worker_health('w_lock')`, nil, &health)
	named("fn_iu_route_worker_health", health["lock_held_by"])
	var detail json.RawMessage
	db.QueryRow(t, `SELECT detail FROM v_queue_health WHERE source = 'cursor' AND subject = 'w_lock'`, nil, &detail)
	var d map[string]any
	if err := json.Unmarshal(detail, &d); err != nil {
		t.Fatal(err)
	}
	named("v_queue_health", d["lock_held_by"])

	admin := db.Conn(t)
	if _, err := admin.Exec(pgtest.Ctx(t), `SET statement_timeout = '20s'`); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	_, err := admin.Exec(pgtest.Ctx(t), `SELECT fn_iu_route_worker_reset_cursor('w_lock')`)
	e := pgtest.RequireSQLState(t, err, "55P03")
	if took := time.Since(began); took > 10*time.Second || !strings.Contains(e.Message, role) || !strings.HasPrefix(e.Message, "fn_iu_route_worker_reset_cursor: worker 'w_lock' is held by another session") {
		t.Fatalf("reset behind a held lock (%v): %s", took, e.Message)
	}
	if _, err := nobody.Exec(pgtest.Ctx(t), `SELECT pg_advisory_unlock_all()`); err != nil {
		t.Fatal(err)
	}
	db.QueryRow(t, `SELECT detail FROM v_queue_health WHERE source = 'cursor' AND subject = 'w_lock'`, nil, &detail)
	if !strings.Contains(string(detail), `"lock_held_by": []`) {
		t.Fatalf("released: %s", detail)
	}
}

// Rule (issue 21): a closed gate with waiting events is reported. Every run of a gated
// worker is a clean no-op, so before, with both gates closed and events piling up, nothing
// said so: v_queue_health called the worker never_run or backlog. Now its row says gated,
// with how long a closed gate has kept events waiting (detail.gated_waiting_seconds) and
// how many (backlog); with the gates open it is not gated.
func TestIssue21_AClosedGateWithWaitingEventsIsReported(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	db.Exec(t, `SELECT fn_iu_route_worker_register('w_gate')`)
	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'gate.test') ON CONFLICT DO NOTHING`)
	var hint string
	var backlog int64
	var detail json.RawMessage
	read := func() map[string]any {
		db.QueryRow(t, `SELECT status_hint, backlog, detail FROM v_queue_health WHERE source = 'cursor' AND subject = 'w_gate'`, nil, &hint, &backlog, &detail)
		var d map[string]any
		if err := json.Unmarshal(detail, &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := read(); hint == "gated" || d["gated_waiting_since"] != nil {
		t.Fatalf("gates closed, nothing waiting: %s %v", hint, d)
	}
	db.Exec(t, `SELECT fn_iu_emit_event('iu', 'gate.test', 's') FROM generate_series(1, 5)`)
	d := read()
	if hint != "gated" || backlog != 5 || d["gates_open"] != false || d["gated_waiting_seconds"] == nil {
		t.Fatalf("gates closed, 5 waiting: status %s, backlog %d, detail %v", hint, backlog, d)
	}
	db.Exec(t, `UPDATE dot_config SET value = 'true' WHERE key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled')`)
	if d = read(); hint == "gated" || d["gated_waiting_seconds"] != nil {
		t.Fatalf("gates open: %s %v", hint, d)
	}
}

// Rule: a closed gate's grace is counted from when its value was set, not from its row's
// last write. gated_waiting_since is the later of the oldest waiting event and the closed
// gate's updated_at, and dot_config's trigger moved updated_at on every UPDATE: editing a
// long-closed gate's description (or a config-management run rewriting the rows as they
// are) made events that had waited past the grace read as inside it again (iu-runner health
// back from 3 to 0 for another --gated-grace). Now an edit that keeps the value keeps
// updated_at; a change of value ('false' to 'off', still closed) is an operator acting on
// the gate and restarts it.
func TestIssue21_AnEditThatKeepsAClosedGateKeepsItsGrace(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	db.Exec(t, `SELECT fn_iu_route_worker_register('w_grace')`)
	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'grace.test') ON CONFLICT DO NOTHING`)
	db.Exec(t, `SELECT fn_iu_emit_event('iu', 'grace.test', 's') FROM generate_series(1, 3)`)
	since := func() time.Time {
		var at *time.Time
		db.QueryRow(t, `SELECT gated_waiting_since FROM v_iu_route_worker_status WHERE worker_name = 'w_grace'`, nil, &at)
		if at == nil {
			t.Fatal("gates closed with events waiting: gated_waiting_since must be set")
		}
		return *at
	}
	first := since()
	db.Exec(t, `UPDATE dot_config SET description = description || ' (reviewed)' WHERE key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled')`)
	db.Exec(t, `UPDATE dot_config SET value = value WHERE key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled')`)
	if got := since(); !got.Equal(first) {
		t.Fatalf("edits that keep the closed gates' values moved gated_waiting_since from %v to %v", first, got)
	}
	db.Exec(t, `UPDATE dot_config SET value = 'off' WHERE key = 'iu_core.routes_enabled'`)
	db.Exec(t, `UPDATE dot_config SET value = 'off' WHERE key = 'iu_core.route_worker_enabled'`)
	if got := since(); !got.After(first) {
		t.Fatalf("a change of the closed gates' values must restart the grace: %v, was %v", got, first)
	}
}

// Rule (issue 21): the backlog is exported exactly up to a bound every rule's threshold lies
// below: v_queue_health counts a worker's backlog up to iu_core.fn_iu_route_worker_backlog_cap()
// and iu-runner's metrics.BacklogCap (which deploy/check holds the rules to) is that figure.
func TestIssue21_TheBacklogCapIsTheRunnersBound(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	var sqlCap int
	db.QueryRow(t, `SELECT iu_core.fn_iu_route_worker_backlog_cap()`, nil, &sqlCap)
	if sqlCap != metrics.BacklogCap {
		t.Fatalf("the SQL counts the backlog up to %d, the runner's bound is %d", sqlCap, metrics.BacklogCap)
	}
	db.Exec(t, `SELECT fn_iu_route_worker_register('w_cap')`)
	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'cap.test') ON CONFLICT DO NOTHING`)
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream) SELECT 'iu', 'cap.test', 's' FROM generate_series(1, $1::int)`, sqlCap+5)
	var backlog int64
	var capped bool
	db.QueryRow(t, `SELECT backlog, backlog_capped FROM v_iu_route_worker_status WHERE worker_name = 'w_cap'`, nil, &backlog, &capped)
	if backlog != int64(sqlCap) || !capped {
		t.Fatalf("backlog %d capped %v over %d events, want %d capped", backlog, capped, sqlCap+5, sqlCap)
	}
}
