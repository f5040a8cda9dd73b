package queuehealth

import (
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule: the protected legacy marker is refused with JSON (not a RAISE), and
// nothing is written: its last beat never advances through the wrapper.
func TestCutPing_PC1_ProtectedLegacyRefused(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	out := callJSON(t, db.Pool, `SELECT fn_cut_heartbeat_ping('iu_outbound_default', 'PG_worker', 'ok', '{}')`)
	requireJSONEqual(t, out, `{"refused": true, "reason": "protected_legacy_silent_passive"}`)
	if n := count(t, db, `SELECT count(*) FROM queue_heartbeat`); n != 0 {
		t.Fatalf("a refused ping wrote %d rows", n)
	}

	// With the legacy row present (registered by the route worker) and silent, it stays silent.
	db.Exec(t, `SELECT fn_iu_route_worker_register('iu_outbound_default')`)
	silence(t, db, "iu_outbound_default", 360000)
	out = callJSON(t, db.Pool, `SELECT fn_cut_heartbeat_ping('iu_outbound_default')`)
	requireJSONEqual(t, out, `{"refused": true, "reason": "protected_legacy_silent_passive"}`)
	var age float64
	var ticks int
	db.QueryRow(t, `SELECT extract(epoch FROM now() - last_beat_at), ticks_total FROM queue_heartbeat WHERE executor_id = 'iu_outbound_default'`, nil, &age, &ticks)
	if age < 359000 || ticks != 0 {
		t.Fatalf("protected row was healed: age %.0f s, ticks %d", age, ticks)
	}

	// The protected check comes before the kind check (policy order): still a refusal.
	out = callJSON(t, db.Pool, `SELECT fn_cut_heartbeat_ping('iu_outbound_default', 'MOT_invalid', 'garbled')`)
	requireJSONEqual(t, out, `{"refused": true, "reason": "protected_legacy_silent_passive"}`)

	// The protected set is extendable by configuration; iu_outbound_default stays in it.
	setConfig(t, db, "queue.heartbeat.protected_executors", "legacy_a, legacy_b")
	for _, name := range []string{"legacy_a", "legacy_b", "iu_outbound_default"} {
		out = callJSON(t, db.Pool, `SELECT fn_cut_heartbeat_ping($1)`, name)
		requireJSONEqual(t, out, `{"refused": true, "reason": "protected_legacy_silent_passive"}`)
	}
	setConfig(t, db, "queue.heartbeat.protected_executors", "")
	out = callJSON(t, db.Pool, `SELECT fn_cut_heartbeat_ping('iu_outbound_default')`)
	requireJSONEqual(t, out, `{"refused": true, "reason": "protected_legacy_silent_passive"}`)
}

// Rule: a valid ping ticks (ticks_total = 1), the row is visible, and the
// metadata carries the audit pin (ping_origin, ping_function, ping_actor, ping_at) on top
// of the caller's keys; app.actor is honoured, with the documented fallback.
func TestCutPing_PC2_PC5_TickAndAuditPin(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	out := callJSON(t, db.Pool, `SELECT fn_cut_heartbeat_ping('cut_pipeline_operator_test', 'external_worker', 'ok', '{"phase": "053_proof"}')`)
	if num(t, out, "ticks_total") != 1 || out["executor_name"] != "cut_pipeline_operator_test" {
		t.Fatalf("PC.2: %v", out)
	}
	// PC.5: the row exists.
	meta := callJSON(t, db.Pool, `SELECT last_beat_payload FROM queue_heartbeat WHERE executor_id = 'cut_pipeline_operator_test'`)
	if meta["phase"] != "053_proof" || meta["ping_origin"] != "cut_pipeline_caller" ||
		meta["ping_function"] != "fn_cut_heartbeat_ping" || meta["ping_actor"] != "cut_pipeline_operator_external" {
		t.Fatalf("PC.5 metadata: %v", meta)
	}
	if at, err := time.Parse(time.RFC3339Nano, meta["ping_at"].(string)); err != nil || time.Since(at) > time.Minute {
		t.Fatalf("ping_at = %v (%v)", meta["ping_at"], err)
	}

	// app.actor, when set, is the ping_actor.
	tx, err := db.Pool.Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx(t))
	if _, err := tx.Exec(ctx(t), `SELECT set_config('app.actor', 'alice@ops', true)`); err != nil {
		t.Fatal(err)
	}
	out = callJSON(t, tx, `SELECT fn_cut_heartbeat_ping('cut_pipeline_operator_test', 'external_worker', 'warn', '{}')`)
	if num(t, out, "ticks_total") != 2 || out["status"] != "warn" {
		t.Fatalf("second ping: %v", out)
	}
	meta = callJSON(t, tx, `SELECT last_beat_payload FROM queue_heartbeat WHERE executor_id = 'cut_pipeline_operator_test'`)
	if meta["ping_actor"] != "alice@ops" {
		t.Fatalf("ping_actor = %v, want alice@ops", meta["ping_actor"])
	}
}

// Rule, and the name pre-check: RAISE with the function-prefixed messages.
func TestCutPing_PC3_PC4_RaisesOnBadInput(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	for _, c := range []struct{ name, sql, msg string }{
		{"name NULL", `SELECT fn_cut_heartbeat_ping(NULL)`, "fn_cut_heartbeat_ping: p_executor_name required"},
		{"name empty", `SELECT fn_cut_heartbeat_ping('')`, "fn_cut_heartbeat_ping: p_executor_name required"},
		{"PC.3 kind", `SELECT fn_cut_heartbeat_ping('cut_x', 'MOT_invalid')`, "fn_cut_heartbeat_ping: p_executor_kind 'MOT_invalid' not in 7-vocab (DOT, Agent, Hermes, Codex, PG_worker, external_worker, future_Kestra_adapter)"},
		{"PC.4 status", `SELECT fn_cut_heartbeat_ping('cut_x', 'external_worker', 'garbled')`, "fn_cut_heartbeat_ping: p_status 'garbled' not in {ok,warn,error}"},
	} {
		e := pgtest.RequireSQLState(t, callErr(t, db.Pool, c.sql), "22023")
		if e.Message != c.msg {
			t.Errorf("%s: message = %q, want %q", c.name, e.Message, c.msg)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM queue_heartbeat`); n != 0 {
		t.Fatalf("a raised ping wrote %d rows", n)
	}
}

// Rule: queue.heartbeat.enabled not exactly 'true' (missing, 'false', a typo)
// means {"skipped": true} and no write — fail-closed.
func TestCutPing_GateOffSkips(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	for _, v := range []string{"false", "TRUE", "yes", ""} {
		setConfig(t, db, "queue.heartbeat.enabled", v)
		requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_cut_heartbeat_ping('cut_x')`), `{"skipped": true}`)
	}
	db.Exec(t, `DELETE FROM dot_config WHERE key = 'queue.heartbeat.enabled'`)
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_cut_heartbeat_ping('cut_x')`), `{"skipped": true}`)
	if n := count(t, db, `SELECT count(*) FROM queue_heartbeat`); n != 0 {
		t.Fatalf("a skipped ping wrote %d rows", n)
	}
	setConfig(t, db, "queue.heartbeat.enabled", "true")
	if out := callJSON(t, db.Pool, `SELECT fn_cut_heartbeat_ping('cut_x')`); num(t, out, "ticks_total") != 1 {
		t.Fatalf("gate on: %v", out)
	}
}

// Rule: the wrapper is SECURITY DEFINER with a pinned search_path (and, like every writing
// entry point, a lock timeout), callable by workflow_admin (who cannot touch the table
// directly) and by nobody else.
func TestCutPing_SecurityDefinerWorkflowAdminOnly(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	var secdef bool
	var config []string
	db.QueryRow(t, `SELECT prosecdef, proconfig FROM pg_proc WHERE oid = 'fn_cut_heartbeat_ping(text,text,text,jsonb)'::regprocedure`, nil, &secdef, &config)
	if !secdef || len(config) != 2 || config[0] != pgtest.PinnedSearchPath || config[1] != "lock_timeout=5s" {
		t.Fatalf("prosecdef %v proconfig %v", secdef, config)
	}
	admin := asRole(t, db, "workflow_admin")
	if out := callJSON(t, admin, `SELECT fn_cut_heartbeat_ping('cut_admin')`); num(t, out, "ticks_total") != 1 {
		t.Fatalf("workflow_admin ping: %v", out)
	}
	pgtest.RequireSQLState(t, callErr(t, admin, `SELECT 1 FROM queue_heartbeat`), "42501")
	exec := asRole(t, db, "dot_executor")
	pgtest.RequireSQLState(t, callErr(t, exec, `SELECT fn_cut_heartbeat_ping('cut_exec')`), "42501")
}
