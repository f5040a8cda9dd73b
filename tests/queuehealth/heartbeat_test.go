package queuehealth

import (
	"strings"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule: fn_queue_heartbeat_register is idempotent — a repeat changes nothing, new values
// update the configuration only — and refuses bad input with 22023.
func TestHeartbeat_RegisterIsIdempotent(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	q := `SELECT fn_queue_heartbeat_register('exec_a', 'Agent', '{iu,kb}', $1, $2, 'ops')`
	first := callJSON(t, db.Pool, q, 10, 30)
	if first["created"] != true || first["registered"] != true {
		t.Fatalf("first registration: %v", first)
	}
	db.Exec(t, `UPDATE queue_heartbeat SET ticks_total = 7 WHERE executor_id = 'exec_a'`)
	again := callJSON(t, db.Pool, q, 10, 30)
	if again["created"] != false || again["changed"] != false || num(t, again, "ticks_total") != 7 {
		t.Fatalf("repeat registration must change nothing: %v", again)
	}
	changed := callJSON(t, db.Pool, q, 20, 60)
	if changed["changed"] != true || num(t, changed, "stale_threshold_seconds") != 60 || num(t, changed, "ticks_total") != 7 {
		t.Fatalf("re-registration with new values: %v", changed)
	}
	if n := count(t, db, `SELECT count(*) FROM queue_heartbeat WHERE executor_id = 'exec_a'`); n != 1 {
		t.Fatalf("rows = %d", n)
	}

	for _, bad := range []struct{ sql, msg string }{
		{`SELECT fn_queue_heartbeat_register('', 'Agent', '{}', 10, 30, 'ops')`, "fn_queue_heartbeat_register: p_executor_id required"},
		{`SELECT fn_queue_heartbeat_register('x', 'MOT', '{}', 10, 30, 'ops')`, "fn_queue_heartbeat_register: p_kind 'MOT' is not one of"},
		{`SELECT fn_queue_heartbeat_register('x', 'Agent', '{}', 0, 30, 'ops')`, "fn_queue_heartbeat_register: p_expected_cadence_seconds must be > 0"},
		{`SELECT fn_queue_heartbeat_register('x', 'Agent', '{}', 10, -1, 'ops')`, "fn_queue_heartbeat_register: p_stale_threshold_seconds must be > 0"},
	} {
		e := pgtest.RequireSQLState(t, callErr(t, db.Pool, bad.sql), "22023")
		if !strings.HasPrefix(e.Message, bad.msg) {
			t.Errorf("message = %q, want prefix %q", e.Message, bad.msg)
		}
	}
}

// Rule: a beat from an unregistered executor is refused with P0002 and a hint to register.
func TestHeartbeat_WriteUnregisteredIsP0002(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	e := pgtest.RequireSQLState(t, callErr(t, db.Pool, `SELECT fn_queue_heartbeat_write('ghost', '{}', 'me')`), "P0002")
	if e.Message != "fn_queue_heartbeat_write: executor 'ghost' is not registered" {
		t.Errorf("message = %q", e.Message)
	}
	if !strings.Contains(e.Hint, "fn_queue_heartbeat_register('ghost'") {
		t.Errorf("hint = %q, want the registration call", e.Hint)
	}
}

// Rule: a beat sets last_beat_at = now(), counts the tick, stores the payload and who beat.
func TestHeartbeat_WriteBeatsAndCounts(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	register(t, db, "exec_w", 10, 30)
	silence(t, db, "exec_w", 3600)
	for i := 1; i <= 3; i++ {
		out := callJSON(t, db.Pool, `SELECT fn_queue_heartbeat_write('exec_w', '{"batch": 3}', 'worker-7')`)
		if num(t, out, "ticks_total") != float64(i) || out["beat"] != true {
			t.Fatalf("beat %d: %v", i, out)
		}
	}
	var age float64
	var by, payload string
	db.QueryRow(t, `SELECT extract(epoch FROM now() - last_beat_at), last_beat_by, last_beat_payload::text FROM queue_heartbeat WHERE executor_id = 'exec_w'`, nil, &age, &by, &payload)
	if age > 5 || by != "worker-7" || payload != `{"batch": 3}` {
		t.Fatalf("after beats: age %.1f s, by %q, payload %s", age, by, payload)
	}
}

// Rule: heartbeat payloads are hygiene-checked at any depth by write, tick and ping,
// with a 22023 error that lists where the keys sit.
func TestHeartbeat_PayloadHygieneAtAnyDepth(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	register(t, db, "exec_h", 10, 30)
	payload := `{"a": {"b": [1, {"secret": "x"}]}, "token": 1}`
	for fn, sql := range map[string]string{
		"fn_queue_heartbeat_write": `SELECT fn_queue_heartbeat_write('exec_h', $1::jsonb, 'me')`,
		"fn_queue_heartbeat_tick":  `SELECT fn_queue_heartbeat_tick('exec_h', 'external_worker', 'ok', $1::jsonb)`,
		"fn_cut_heartbeat_ping":    `SELECT fn_cut_heartbeat_ping('exec_h', 'external_worker', 'ok', $1::jsonb)`,
	} {
		e := pgtest.RequireSQLState(t, callErr(t, db.Pool, sql, payload), "22023")
		if !strings.HasPrefix(e.Message, fn+": ") || !strings.Contains(e.Message, "$.a.b[1].secret") || !strings.Contains(e.Message, "$.token") {
			t.Errorf("%s: message = %q, want the function name and both paths", fn, e.Message)
		}
	}
	if n := count(t, db, `SELECT ticks_total FROM queue_heartbeat WHERE executor_id = 'exec_h'`); n != 0 {
		t.Fatalf("a refused beat must not count: ticks_total = %d", n)
	}
	// The table's CHECK holds for direct writers too (the route worker ticks it directly).
	pgtest.RequireSQLState(t, callErr(t, db.Pool, `UPDATE queue_heartbeat SET last_beat_payload = '{"x": [{"embedding": 1}]}'`), "23514")
}

// Rule: the primitive tick is a generic UPSERT: an unknown executor is registered with the
// documented defaults (cadence 60 s, threshold 180 s), ticks_total counts from 1.
func TestHeartbeat_TickUpsertsWithDocumentedDefaults(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	first := callJSON(t, db.Pool, `SELECT fn_queue_heartbeat_tick('exec_t', 'Hermes')`)
	if first["created"] != true || num(t, first, "ticks_total") != 1 ||
		num(t, first, "expected_cadence_seconds") != 60 || num(t, first, "stale_threshold_seconds") != 180 {
		t.Fatalf("first tick: %v", first)
	}
	second := callJSON(t, db.Pool, `SELECT fn_queue_heartbeat_tick('exec_t', 'Hermes', 'warn', '{"q": 1}')`)
	if second["created"] != false || num(t, second, "ticks_total") != 2 || second["status"] != "warn" {
		t.Fatalf("second tick: %v", second)
	}
	e := pgtest.RequireSQLState(t, callErr(t, db.Pool, `SELECT fn_queue_heartbeat_tick('exec_t', 'Hermes', 'garbled')`), "22023")
	if !strings.HasPrefix(e.Message, "fn_queue_heartbeat_tick: p_status 'garbled'") {
		t.Errorf("message = %q", e.Message)
	}
}

// Rule: a paused executor raises no alert and shows paused; resuming restarts its clock.
func TestHeartbeat_PauseAndResume(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	register(t, db, "exec_p", 10, 30)
	out := callJSON(t, db.Pool, `SELECT fn_queue_heartbeat_pause('exec_p', 'planned maintenance OPS-1', 'alice')`)
	if out["paused"] != true || out["paused_by"] != "alice" {
		t.Fatalf("pause: %v", out)
	}
	if again := callJSON(t, db.Pool, `SELECT fn_queue_heartbeat_pause('exec_p', 'again', 'bob')`); again["already_paused"] != true {
		t.Fatalf("second pause: %v", again)
	}
	silence(t, db, "exec_p", 100000)

	check := callJSON(t, db.Pool, `SELECT fn_queue_stale_check()`)
	if num(t, check, "emitted") != 0 || num(t, check, "stale") != 0 || num(t, check, "paused") != 1 {
		t.Fatalf("stale-check over a paused executor: %v", check)
	}
	var hint string
	var paused bool
	db.QueryRow(t, `SELECT status_hint, paused FROM v_queue_health WHERE source = 'heartbeat' AND subject = 'exec_p'`, nil, &hint, &paused)
	if hint != "paused" || !paused {
		t.Fatalf("v_queue_health: status_hint %q paused %v", hint, paused)
	}

	res := callJSON(t, db.Pool, `SELECT fn_queue_heartbeat_resume('exec_p', 'alice')`)
	if res["resumed"] != true {
		t.Fatalf("resume: %v", res)
	}
	var restarted time.Time
	db.QueryRow(t, `SELECT last_beat_at FROM queue_heartbeat WHERE executor_id = 'exec_p'`, nil, &restarted)
	if time.Since(restarted) > time.Minute {
		t.Fatalf("resume must restart the clock, last_beat_at = %v", restarted)
	}
	db.QueryRow(t, `SELECT status_hint FROM v_queue_health WHERE source = 'heartbeat' AND subject = 'exec_p'`, nil, &hint)
	if hint != "fresh" {
		t.Fatalf("after resume status_hint = %q, want fresh", hint)
	}
	if n := num(t, callJSON(t, db.Pool, `SELECT fn_queue_stale_check()`), "emitted"); n != 0 {
		t.Fatalf("a resumed executor is not silent, emitted %v", n)
	}
	pgtest.RequireSQLState(t, callErr(t, db.Pool, `SELECT fn_queue_heartbeat_pause('nobody', 'x', 'a')`), "P0002")
	pgtest.RequireSQLState(t, callErr(t, db.Pool, `SELECT fn_queue_heartbeat_pause('exec_p', ' ', 'a')`), "22023")
}
