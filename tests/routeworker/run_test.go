package routeworker

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule 1: the dual fail-closed gate. Either gate closed (all
// three closed combinations) is a clean no-op — gated:true with a reason, nothing claimed,
// no attempt, the cursor row unchanged — and the heartbeat is still ticked, with the reason
// in its payload.
func TestRun_DualGateFailsClosedButTicksHeartbeat(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name           string
		routes, worker string
		reason         string
	}{
		{"master closed", "false", "true", "master_gate_closed"},
		{"worker closed", "true", "false", "worker_gate_closed"},
		{"both closed", "false", "false", "master_and_worker_gates_closed"},
		{"typo is closed", "TRUE", "true", "master_gate_closed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db, b := setup(t)
			emit(t, db.Pool, "iu", typDry, 3)
			db.Exec(t, `UPDATE dot_config SET value = $1 WHERE key = 'iu_core.routes_enabled'`, tc.routes)
			db.Exec(t, `UPDATE dot_config SET value = $1 WHERE key = 'iu_core.route_worker_enabled'`, tc.worker)

			before := cursorRow(t, db, b.worker)
			var ticks0 int
			var beat0 time.Time
			db.QueryRow(t, `SELECT ticks_total, last_beat_at FROM queue_heartbeat WHERE executor_id = $1`, []any{b.worker}, &ticks0, &beat0)

			m := run(t, db.Pool, b.worker, 100)
			if m["gated"] != true || m["busy"] != false || m["reason"] != tc.reason {
				t.Fatalf("want gated:true busy:false reason %q, got %v", tc.reason, m)
			}
			requireCounts(t, m, map[string]int{"claimed": 0, "attempts_written": 0, "dead_lettered": 0})
			if n := scalar(t, db, `SELECT count(*) FROM iu_route_attempt`); n != 0 {
				t.Fatalf("a gated run wrote %d attempts", n)
			}
			if after := cursorRow(t, db, b.worker); after != before {
				t.Fatalf("a gated run changed the cursor:\nbefore %s\nafter  %s", before, after)
			}

			var ticks1 int
			var beat1 time.Time
			var reason string
			var clean bool
			db.QueryRow(t, `SELECT ticks_total, last_beat_at, last_beat_payload->>'reason', iu_core.fn_iu_payload_is_clean(last_beat_payload)
			                  FROM queue_heartbeat WHERE executor_id = $1`, []any{b.worker}, &ticks1, &beat1, &reason, &clean)
			if ticks1 != ticks0+1 || !beat1.After(beat0) || reason != tc.reason || !clean {
				t.Fatalf("gated run must tick the heartbeat: ticks %d -> %d, last_beat_at %v -> %v, payload reason %q clean %v",
					ticks0, ticks1, beat0, beat1, reason, clean)
			}
		})
	}
}

// Rule 2 (idempotency key): exactly one iu_route_attempt per event, with
// the status the route decides — dry_run, disabled, skipped (key uses "none"), failed
// (the delivery seam raised: a dead letter with the whole event row and the SQLSTATE) —
// and the key iu_wrk:{worker}:{route_key}:{event_id}. Other domains are not touched.
func TestRun_OneAttemptPerEventWithStatusAndKey(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	ids := map[string]string{
		typDry: emit1(t, db.Pool, typDry), typOff: emit1(t, db.Pool, typOff),
		typNone: emit1(t, db.Pool, typNone), typLive: emit1(t, db.Pool, typLive),
	}
	emit(t, db.Pool, "sys", "x", 5)

	m := run(t, db.Pool, b.worker, 100)
	requireCounts(t, m, map[string]int{"claimed": 4, "attempts_written": 4, "dead_lettered": 1,
		"dry_run": 1, "disabled": 1, "skipped": 1, "failed": 1, "sent": 0})
	if m["gated"] != false || m["busy"] != false || m["worker"] != b.worker {
		t.Fatalf("summary: %v", m)
	}

	want := map[string]struct{ status, route string }{
		typDry: {"dry_run", "r_dry"}, typOff: {"disabled", "r_off"}, typNone: {"skipped", "none"}, typLive: {"failed", "r_live"},
	}
	for typ, id := range ids {
		var status, key, worker string
		var n, attemptNo int
		db.QueryRow(t, `SELECT count(*) OVER (), status, idempotency_key, worker_name, attempt_no
		                  FROM iu_route_attempt WHERE event_ref = $1`, []any{id}, &n, &status, &key, &worker, &attemptNo)
		w := want[typ]
		wantKey := fmt.Sprintf("iu_wrk:%s:%s:%s", b.worker, w.route, id)
		if n != 1 || status != w.status || key != wantKey || worker != b.worker || attemptNo != 1 {
			t.Errorf("%s: %d attempts, status %q key %q worker %q attempt_no %d; want 1, %q, %q, %q, 1",
				typ, n, status, key, worker, attemptNo, w.status, wantKey, b.worker)
		}
	}
	if n := scalar(t, db, `SELECT count(*) FROM iu_route_attempt a JOIN event_outbox e ON e.id = a.event_ref WHERE e.event_domain <> 'iu'`); n != 0 {
		t.Fatalf("%d attempts for other-domain events", n)
	}

	// The failed one: a dead letter with the full event row and the SQLSTATE of the seam.
	var snapshotMatches bool
	var code, msg, key string
	var failed int
	db.QueryRow(t, `SELECT d.event_snapshot = to_jsonb(e), d.error_code, d.error_message, d.idempotency_key, d.failed_attempts
	                  FROM iu_route_dead_letter d JOIN event_outbox e ON e.id = d.event_id`, nil,
		&snapshotMatches, &code, &msg, &key, &failed)
	if !snapshotMatches || code != "0A000" || !strings.HasPrefix(msg, "fn_iu_route_deliver:") ||
		key != fmt.Sprintf("iu_wrk:w:r_live:%s", ids[typLive]) || failed != 1 {
		t.Fatalf("dead letter: snapshot matches %v, code %q, message %q, key %q, failed_attempts %d", snapshotMatches, code, msg, key, failed)
	}
	var attCode string
	db.QueryRow(t, `SELECT error_code FROM iu_route_attempt WHERE status = 'failed'`, nil, &attCode)
	if attCode != "0A000" {
		t.Fatalf("failed attempt error_code %q, want 0A000", attCode)
	}
	requireExactlyOnce(t, db, b.worker)
}

// Rule 2 (idempotency, second layer): after fn_iu_route_worker_reset_cursor the re-scan
// reads everything again but writes no duplicate attempt and no duplicate dead letter,
// and never hands an already attempted event to the delivery seam again.
func TestRun_ResetRescanWritesNoDuplicates(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	for _, typ := range []string{typDry, typOff, typNone, typLive} {
		emit(t, db.Pool, "iu", typ, 3)
	}
	first := runUntilCaughtUp(t, db.Pool, b.worker, 5)
	if first["attempts_written"] != 12 || first["dead_lettered"] != 3 {
		t.Fatalf("first scan: %v", first)
	}

	var res map[string]any
	db.QueryRow(t, `SELECT fn_iu_route_worker_reset_cursor('w')`, nil, &res)
	if res["reset"] != true || res["cursor"] != "start_of_stream" {
		t.Fatalf("reset: %v", res)
	}
	again := runUntilCaughtUp(t, db.Pool, b.worker, 5)
	if again["claimed"] != 12 || again["attempts_written"] != 0 || again["dead_lettered"] != 0 || again["already_attempted"] != 12 {
		t.Fatalf("re-scan must claim all 12 again and write nothing: %v", again)
	}
	if again["fallback_runs"] != 0 {
		t.Fatalf("the re-scan left the set-based path (its insert conflicted instead of DO NOTHING): %v", again)
	}
	if n := scalar(t, db, `SELECT count(*) FROM iu_route_attempt`); n != 12 {
		t.Fatalf("%d attempts after the re-scan, want 12", n)
	}
	if n := scalar(t, db, `SELECT count(*) FROM iu_route_dead_letter`); n != 3 {
		t.Fatalf("%d dead letters after the re-scan, want 3", n)
	}
	if n := scalar(t, db, `SELECT max(failed_attempts) FROM iu_route_dead_letter`); n != 1 {
		t.Fatalf("the re-scan re-delivered: failed_attempts %d", n)
	}
	requireExactlyOnce(t, db, b.worker)
}

// Rule 2 (idempotency, both layers in one page): a page that mixes events already
// attempted (a re-scan after a reset) with new ones writes the new ones once and only
// counts the old ones, in the set-based path. The page is first written with a plain
// INSERT; the existing keys make it fail, and the page is written again with existing
// keys skipped: a guarded page must still write what is new, and the rest of the run
// must neither duplicate nor drop anything.
func TestRun_RescanPageMixingOldAndNewEventsWritesOnlyTheNew(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	emit(t, db.Pool, "iu", typDry, 3)
	emit(t, db.Pool, "iu", typNone, 2)
	first := runUntilCaughtUp(t, db.Pool, b.worker, 100)
	if first["attempts_written"] != 5 {
		t.Fatalf("first scan: %v", first)
	}
	db.Exec(t, `SELECT fn_iu_route_worker_reset_cursor('w')`)
	fresh := append(emit(t, db.Pool, "iu", typDry, 2), emit(t, db.Pool, "iu", typOff, 1)...)

	// One page holds the 5 old events and the 3 new ones.
	m := run(t, db.Pool, b.worker, 100)
	requireCounts(t, m, map[string]int{"claimed": 8, "attempts_written": 3, "already_attempted": 5,
		"dry_run": 2, "disabled": 1, "skipped": 0})
	if m["fallback"] != false {
		t.Fatalf("the mixed page left the set-based path: %v", m)
	}
	if n := scalar(t, db, `SELECT count(*) FROM iu_route_attempt WHERE event_ref::text = ANY($1)`, fresh); n != 3 {
		t.Fatalf("%d attempts for the 3 new events, want 3", n)
	}
	// Pages after the guarded one, in later runs and in the same run, stay exact.
	emit(t, db.Pool, "iu", typNone, 4)
	db.Exec(t, `SELECT fn_iu_route_worker_reset_cursor('w')`)
	emit(t, db.Pool, "iu", typDry, 3)
	again := runUntilCaughtUp(t, db.Pool, b.worker, 4)
	if again["attempts_written"] != 7 || again["already_attempted"] != 8 || again["fallback_runs"] != 0 {
		t.Fatalf("re-scan over 3 pages per run: want 7 written, 8 already attempted, no fallback: %v", again)
	}
	if n := scalar(t, db, `SELECT count(*) FROM iu_route_attempt`); n != 15 {
		t.Fatalf("%d attempts, want 15 (one per event)", n)
	}
	requireExactlyOnce(t, db, b.worker)
}

// Rule 3: one failing event never aborts the batch — failing events
// (delivery seam) interleaved with good ones: the good ones are audited, the bad ones
// become failed attempts plus dead letters, and the cursor moves past all of them.
func TestRun_FailingEventsDoNotAbortTheBatch(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	tx, err := db.Pool.Begin(pgtest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{typDry, typLive, typDry, typLive, typOff, typLive, typNone} {
		emit1(t, tx, typ)
	}
	if err := tx.Commit(pgtest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	m := run(t, db.Pool, b.worker, 100)
	requireCounts(t, m, map[string]int{"claimed": 7, "attempts_written": 7, "dead_lettered": 3,
		"dry_run": 2, "disabled": 1, "skipped": 1, "failed": 3})
	if m["caught_up"] != true {
		t.Fatalf("the batch did not finish: %v", m)
	}
	requireCounts(t, run(t, db.Pool, b.worker, 100), map[string]int{"claimed": 0})
	requireExactlyOnce(t, db, b.worker)
}

// Rule 3 + rule 9 (fallback): should the set-based page statement itself fail (here a
// trigger poisons one event's dry_run insert), the page is redone event by event, so the
// poisoned event becomes a failed attempt and a dead letter and the rest are audited.
func TestRun_PageStatementFailureFallsBackPerEvent(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	good := emit(t, db.Pool, "iu", typDry, 4)
	poison := emit1(t, db.Pool, typDry)
	good = append(good, emit(t, db.Pool, "iu", typNone, 3)...)
	db.Exec(t, `
		CREATE FUNCTION test_poison() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.status <> 'failed' AND NEW.event_ref = '`+poison+`' THEN
				RAISE EXCEPTION 'test_poison: this event cannot be audited' USING ERRCODE = '22P02';
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER trg_test_poison BEFORE INSERT ON iu_route_attempt
			FOR EACH ROW EXECUTE FUNCTION test_poison();`)

	m := run(t, db.Pool, b.worker, 100)
	if m["fallback"] != true {
		t.Fatalf("want fallback:true, got %v", m)
	}
	// The summary names why the page statement failed: the error text, as a JSON string.
	if e, _ := m["fallback_error"].(string); !strings.Contains(e, "test_poison: this event cannot be audited") {
		t.Fatalf("want the page statement's error as fallback_error, got %v", m["fallback_error"])
	}
	requireCounts(t, m, map[string]int{"claimed": 8, "attempts_written": 8, "dead_lettered": 1,
		"dry_run": 4, "skipped": 3, "failed": 1})
	var status, code string
	db.QueryRow(t, `SELECT a.status, d.error_code FROM iu_route_attempt a JOIN iu_route_dead_letter d USING (idempotency_key)
	                 WHERE a.event_ref = $1`, []any{poison}, &status, &code)
	if status != "failed" || code != "22P02" {
		t.Fatalf("poisoned event: status %q, dead letter code %q", status, code)
	}
	if n := scalar(t, db, `SELECT count(*) FROM iu_route_attempt WHERE event_ref::text = ANY($1) AND status IN ('dry_run', 'skipped')`, good); n != len(good) {
		t.Fatalf("%d of %d good events audited", n, len(good))
	}
	requireExactlyOnce(t, db, b.worker)
}

// Rule 4: the cursor advances in the same transaction as the attempts —
// a run rolled back leaves neither attempts nor a moved cursor — and the counters
// (events_seen, attempts_written, dead_lettered, runs_total, last_run_at,
// last_run_summary, last_created_at/last_event_id) follow the runs.
func TestRun_CursorAdvancesAtomicallyWithAttempts(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	emit(t, db.Pool, "iu", typDry, 4)
	emit1(t, db.Pool, typLive)

	before := cursorRow(t, db, b.worker)
	tx, err := db.Pool.Begin(pgtest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	requireCounts(t, run(t, tx, b.worker, 3), map[string]int{"claimed": 3})
	if err := tx.Rollback(pgtest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	if after := cursorRow(t, db, b.worker); after != before {
		t.Fatalf("rolled-back run moved the cursor:\n%s\n%s", before, after)
	}
	if n := scalar(t, db, `SELECT count(*) FROM iu_route_attempt`); n != 0 {
		t.Fatalf("rolled-back run left %d attempts", n)
	}

	m1 := run(t, db.Pool, b.worker, 3)
	var seen, written, dead, runs int
	var summary map[string]any
	var windowOpen, lastIsThird bool
	db.QueryRow(t, `
		SELECT c.events_seen, c.attempts_written, c.dead_lettered, c.runs_total, c.last_run_summary,
		       c.window_snapshot IS NOT NULL,
		       (c.window_txid, c.window_event_id) = (SELECT e.txid, e.id FROM event_outbox e WHERE e.event_domain = 'iu'
		                                               ORDER BY e.txid, e.id OFFSET 2 LIMIT 1)
		       AND c.last_event_id = c.window_event_id AND c.last_created_at IS NOT NULL AND c.last_run_at IS NOT NULL
		  FROM iu_route_worker_cursor c WHERE c.worker_name = 'w'`, nil,
		&seen, &written, &dead, &runs, &summary, &windowOpen, &lastIsThird)
	if seen != 3 || written != 3 || dead != 0 || runs != 1 || !windowOpen || !lastIsThird {
		t.Fatalf("after run 1: events_seen %d attempts_written %d dead_lettered %d runs_total %d window open %v position ok %v",
			seen, written, dead, runs, windowOpen, lastIsThird)
	}
	if fmt.Sprint(summary) != fmt.Sprint(m1) {
		t.Fatalf("last_run_summary %v differs from the returned summary %v", summary, m1)
	}

	requireCounts(t, run(t, db.Pool, b.worker, 3), map[string]int{"claimed": 2, "dead_lettered": 1})
	var doneSet, windowNull bool
	db.QueryRow(t, `SELECT events_seen, attempts_written, dead_lettered, runs_total,
	                       done_snapshot IS NOT NULL, window_snapshot IS NULL AND window_txid IS NULL
	                  FROM iu_route_worker_cursor WHERE worker_name = 'w'`, nil,
		&seen, &written, &dead, &runs, &doneSet, &windowNull)
	if seen != 5 || written != 5 || dead != 1 || runs != 2 || !doneSet || !windowNull {
		t.Fatalf("after run 2: events_seen %d attempts_written %d dead_lettered %d runs_total %d done set %v window closed %v",
			seen, written, dead, runs, doneSet, windowNull)
	}
	requireExactlyOnce(t, db, b.worker)
}

// Rule 10: a run beats the worker's PG_worker heartbeat — last_beat_at = now(),
// ticks_total + 1, status ok, a small payload that passes the hygiene check — whenever a
// beat is due: the first run, and any run once the last beat is older than a quarter of
// the expected cadence (15 s of the default 60 s). A run in between only reads the row, so
// a tightly polled worker does not write its heartbeat on every call.
func TestRun_BeatsHeartbeatWhenDue(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	emit(t, db.Pool, "iu", typDry, 2)
	type beat struct {
		ticks   int
		at      time.Time
		status  string
		clean   bool
		claimed *int
	}
	read := func() beat {
		var x beat
		db.QueryRow(t, `SELECT ticks_total, last_beat_at, status, iu_core.fn_iu_payload_is_clean(last_beat_payload),
		                       (last_beat_payload->>'claimed')::int
		                  FROM queue_heartbeat WHERE executor_id = $1`, []any{b.worker}, &x.ticks, &x.at, &x.status, &x.clean, &x.claimed)
		return x
	}
	runAt := func() time.Time {
		var at time.Time
		db.QueryRow(t, `SELECT (fn_iu_route_worker_run('w')->>'run_at')::timestamptz`, nil, &at)
		return at
	}
	at1 := runAt()
	first := read()
	if first.ticks != 1 || !first.at.Equal(at1) || first.status != "ok" || !first.clean || first.claimed == nil || *first.claimed != 2 {
		t.Fatalf("first run must beat: %+v (run at %v)", first, at1)
	}
	runAt()
	if again := read(); again.ticks != 1 || !again.at.Equal(first.at) {
		t.Fatalf("a run 0 s after the last beat must not beat again: %+v", again)
	}
	// Just inside the quarter (14 s of 15): still fresh, so the run does not beat. With the
	// 16 s case below this pins the threshold to within a second on either side.
	db.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now() - interval '14 seconds' WHERE executor_id = $1`, b.worker)
	runAt()
	if inside := read(); inside.ticks != 1 {
		t.Fatalf("a run 14 s after the last beat (cadence 60 s, a beat due after 15 s) must not beat: %+v", inside)
	}
	// Age the beat past a quarter of the cadence: the next run beats.
	db.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now() - interval '16 seconds' WHERE executor_id = $1`, b.worker)
	at3 := runAt()
	if third := read(); third.ticks != 2 || !third.at.Equal(at3) || third.status != "ok" || !third.clean {
		t.Fatalf("a run 16 s after the last beat (cadence 60 s) must beat: %+v (run at %v)", third, at3)
	}
}

// Rule: bad arguments are refused with the function name first and the right
// SQLSTATE — NULL/empty worker or a batch outside 1..10000 → 22023; an unknown worker →
// P0002 with a HINT to register it.
func TestRun_BadArguments(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	for _, call := range []string{
		`SELECT fn_iu_route_worker_run(NULL)`,
		`SELECT fn_iu_route_worker_run('')`,
		`SELECT fn_iu_route_worker_run('w', 0)`,
		`SELECT fn_iu_route_worker_run('w', 10001)`,
		`SELECT fn_iu_route_worker_run('w', -1)`,
		`SELECT fn_iu_route_worker_run('w', NULL)`,
	} {
		_, err := db.Pool.Exec(pgtest.Ctx(t), call)
		e := pgtest.RequireSQLState(t, err, "22023")
		if !strings.HasPrefix(e.Message, "fn_iu_route_worker_run: ") {
			t.Errorf("%s: message %q does not start with the function name", call, e.Message)
		}
	}
	// The bounds themselves are fine.
	run(t, db.Pool, "w", 1)
	run(t, db.Pool, "w", 10000)
	// A caught-up worker with a fresh beat is the idle path's (the probe checks the batch
	// limit for it): a bad batch is refused all the same.
	caughtUpAndFresh(t, db, "w")
	for _, limit := range []string{"0", "10001", "NULL"} {
		_, err := db.Pool.Exec(pgtest.Ctx(t), `SELECT fn_iu_route_worker_run('w', `+limit+`)`)
		pgtest.RequireSQLState(t, err, "22023")
	}

	_, err := db.Pool.Exec(pgtest.Ctx(t), `SELECT fn_iu_route_worker_run('nobody')`)
	e := pgtest.RequireSQLState(t, err, "P0002")
	if !strings.HasPrefix(e.Message, "fn_iu_route_worker_run: ") || !strings.Contains(e.Hint, "fn_iu_route_worker_register('nobody')") {
		t.Fatalf("unknown worker: message %q hint %q", e.Message, e.Hint)
	}

	for call, code := range map[string]string{
		`SELECT fn_iu_route_worker_register(NULL)`:                 "22023",
		`SELECT fn_iu_route_worker_register('')`:                   "22023",
		`SELECT fn_iu_route_worker_register('a:b')`:                "22023",
		`SELECT fn_iu_route_worker_register('x', NULL)`:            "22023",
		`SELECT fn_iu_route_worker_register('w', 'other')`:         "22023", // w already consumes iu
		`SELECT fn_iu_route_worker_reset_cursor(NULL)`:             "22023",
		`SELECT fn_iu_route_worker_reset_cursor('nobody')`:         "P0002",
		`SELECT fn_iu_route_worker_health('nobody')`:               "P0002",
		`SELECT fn_iu_route_worker_health('')`:                     "22023",
		`SELECT fn_iu_route_dead_letter_replay(NULL)`:              "22023",
		`SELECT fn_iu_route_dead_letter_replay(gen_random_uuid())`: "P0002",
	} {
		_, err := db.Pool.Exec(pgtest.Ctx(t), call)
		e := pgtest.RequireSQLState(t, err, code)
		fn := call[len("SELECT "):strings.Index(call, "(")]
		if !strings.HasPrefix(e.Message, fn+": ") {
			t.Errorf("%s: message %q does not start with %s", call, e.Message, fn)
		}
	}
}

// Rule, register: the cursor starts at the start of the stream, the call is idempotent
// (a second call changes nothing and keeps the heartbeat's history), system_identifier is
// recorded, and a PG_worker heartbeat row with a cadence and threshold is registered.
func TestRegister_IdempotentWithHeartbeat(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	emit(t, db.Pool, "iu", typDry, 2)
	var first, second map[string]any
	db.QueryRow(t, `SELECT fn_iu_route_worker_register('w2')`, nil, &first)
	if first["created"] != true || first["cursor"] != "start_of_stream" || first["worker"] != "w2" || first["event_domain"] != "iu" {
		t.Fatalf("first register: %v", first)
	}
	var sysOK bool
	db.QueryRow(t, `SELECT c.system_identifier = (SELECT system_identifier FROM pg_control_system())
	                         AND c.done_snapshot IS NULL AND c.window_snapshot IS NULL
	                    FROM iu_route_worker_cursor c WHERE worker_name = 'w2'`, nil, &sysOK)
	if !sysOK {
		t.Fatal("register must record this cluster's system_identifier and start at the start of the stream")
	}
	var kind string
	var scope []string
	var cadence, threshold int
	db.QueryRow(t, `SELECT executor_kind, domain_scope, expected_cadence_seconds, stale_threshold_seconds
	                  FROM queue_heartbeat WHERE executor_id = 'w2'`, nil, &kind, &scope, &cadence, &threshold)
	if kind != "PG_worker" || len(scope) != 1 || scope[0] != "iu" || cadence != 60 || threshold != 300 {
		t.Fatalf("heartbeat row: kind %q scope %v cadence %d threshold %d", kind, scope, cadence, threshold)
	}

	requireCounts(t, run(t, db.Pool, "w2", 100), map[string]int{"claimed": 2})
	cur := cursorRow(t, db, "w2")
	db.QueryRow(t, `SELECT fn_iu_route_worker_register('w2')`, nil, &second)
	if second["created"] != false || second["heartbeat_created"] != false {
		t.Fatalf("second register: %v", second)
	}
	if cursorRow(t, db, "w2") != cur {
		t.Fatal("re-register moved the cursor")
	}
	if n := scalar(t, db, `SELECT ticks_total FROM queue_heartbeat WHERE executor_id = 'w2'`); n != 1 {
		t.Fatalf("re-register reset the heartbeat history: ticks_total %d", n)
	}
}

// Rule 7 (second half): workers with different names are independent consumers — each
// its own cursor, attempts and keys; one worker's run in progress does not make another
// busy.
func TestRun_DifferentlyNamedWorkersAreIndependent(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	db.Exec(t, `SELECT fn_iu_route_worker_register('w2')`)
	ids := emit(t, db.Pool, "iu", typDry, 5)

	requireCounts(t, run(t, db.Pool, b.worker, 100), map[string]int{"claimed": 5, "dry_run": 5})
	// w is caught up; w2 has seen nothing yet.
	requireCounts(t, run(t, db.Pool, b.worker, 100), map[string]int{"claimed": 0})

	// Hold w's row lock in an open run; w2 still runs, and is not busy.
	conn := db.Conn(t)
	tx, err := conn.Begin(pgtest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(pgtest.Ctx(t)) //nolint:errcheck
	run(t, tx, b.worker, 100)
	m := run(t, db.Pool, "w2", 100)
	if m["busy"] != false {
		t.Fatalf("w2 reported busy while w runs: %v", m)
	}
	requireCounts(t, m, map[string]int{"claimed": 5, "dry_run": 5, "attempts_written": 5})
	if n := scalar(t, db, `SELECT count(*) FROM iu_route_attempt WHERE idempotency_key = 'iu_wrk:w2:r_dry:' || $1`, ids[0]); n != 1 {
		t.Fatalf("w2 attempt keyed by its own name: found %d", n)
	}
	requireExactlyOnce(t, db, "w")
	requireExactlyOnce(t, db, "w2")
}

// Rule 2 (delivery seam): with a working seam (a stub standing in for a future
// fn_iu_route_deliver) an enabled, dry_run = false route writes a "sent" attempt carrying
// the seam's answer; after a cursor reset the re-scan never hands the event to the seam a
// second time (the idempotency key guards delivery, not only the audit row).
func TestRun_DeliverySeamSentAndNeverRedelivered(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	db.Exec(t, `
		CREATE TABLE test_deliveries (idempotency_key text NOT NULL, event_id text NOT NULL);
		CREATE OR REPLACE FUNCTION public.fn_iu_route_deliver(p_event_snapshot jsonb, p_route_key text, p_route_kind text, p_idempotency_key text)
		RETURNS jsonb LANGUAGE plpgsql AS $$
		BEGIN
			INSERT INTO public.test_deliveries VALUES (p_idempotency_key, p_event_snapshot->>'id');
			RETURN jsonb_build_object('delivered', true);
		END $$;`)
	ids := emit(t, db.Pool, "iu", typLive, 3)
	emit(t, db.Pool, "iu", typDry, 2)

	requireCounts(t, run(t, db.Pool, b.worker, 100), map[string]int{"claimed": 5, "sent": 3, "dry_run": 2, "failed": 0, "dead_lettered": 0})
	var sentWithAnswer int
	db.QueryRow(t, `SELECT count(*) FROM iu_route_attempt a JOIN test_deliveries d USING (idempotency_key)
	                 WHERE a.status = 'sent' AND a.detail->>'delivered' = 'true' AND d.event_id = a.event_ref::text
	                   AND a.event_ref::text = ANY($1)`, []any{ids}, &sentWithAnswer)
	if sentWithAnswer != 3 {
		t.Fatalf("%d sent attempts matching a delivery, want 3", sentWithAnswer)
	}

	db.Exec(t, `SELECT fn_iu_route_worker_reset_cursor('w')`)
	again := runUntilCaughtUp(t, db.Pool, b.worker, 2)
	if again["claimed"] != 5 || again["attempts_written"] != 0 || again["sent"] != 0 {
		t.Fatalf("re-scan: %v", again)
	}
	if n := scalar(t, db, `SELECT count(*) FROM test_deliveries`); n != 3 {
		t.Fatalf("the seam was called %d times for 3 events: the re-scan re-delivered", n)
	}
	requireExactlyOnce(t, db, b.worker)
}
