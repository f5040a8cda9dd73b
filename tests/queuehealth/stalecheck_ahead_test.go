package queuehealth

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule: a beat stamped ahead of the clock proves nothing, and hides nobody. Every beat is
// stamped with the server's now(); when the server's clock was ahead (a VM resumed with a
// wrong clock, then corrected by an NTP step), an executor that beat then and died read
// fresh, with a negative age, until the clock caught up with its stamp: v_queue_health said
// fresh, the stale-check sent no alert and iu-runner health exited 0, for the size of the
// step plus the threshold. Now such a stamp is stale to the view, and the stale-check resets
// it to the clock, as if the executor beat when the check noticed it: a live executor beats
// again within its cadence and raises nothing (after a step every live executor's stamp is
// ahead: alerting them all would be an alert storm), a dead one is alerted one threshold
// later, with a positive age. A stamp the check cannot reset (a session holds the row) is
// alerted as it stands, and that silence ends only with a new beat.
func TestStaleCheck_ABeatStampedAheadOfTheClockIsStale(t *testing.T) {
	t.Parallel()
	// stepped gives the victim a last beat stamped two hours ahead (the clock is moved, as
	// silence does) and requires the view to read it stale before any check ran.
	stepped := func(t *testing.T) *pgtest.DB {
		t.Helper()
		db := pgtest.NewDB(t)
		setConfig(t, db, "queue.heartbeat.stale_threshold_seconds", "0")
		register(t, db, "victim", 10, 30)
		silence(t, db, "victim", -7200)
		if hint := heartbeatHint(t, db, "victim"); hint != "stale" {
			t.Fatalf("v_queue_health must read a beat two hours ahead of the clock as stale, got %q", hint)
		}
		return db
	}
	alerts := func(t *testing.T, db *pgtest.DB, typ string) int {
		t.Helper()
		return count(t, db, `SELECT count(*) FROM event_outbox WHERE event_type = $1 AND event_subject_ref = 'victim'`, typ)
	}

	t.Run("the check resets the stamp, and a live executor raises nothing", func(t *testing.T) {
		t.Parallel()
		db := stepped(t)
		out := staleCheck(t, db.Pool)
		if num(t, out, "ahead_reset") != 1 || num(t, out, "stale") != 0 || num(t, out, "emitted") != 0 {
			t.Fatalf("the check must reset a stamp two hours ahead to the clock, alerting nothing: %v", out)
		}
		var reset bool
		db.QueryRow(t, `SELECT last_beat_at <= clock_timestamp() AND last_beat_at > clock_timestamp() - interval '1 minute'
		                  FROM queue_heartbeat WHERE executor_id = 'victim'`, nil, &reset)
		if !reset {
			t.Fatal("the stamp must be the check's clock")
		}
		if hint := heartbeatHint(t, db, "victim"); hint != "fresh" {
			t.Fatalf("after the reset the view reads the executor as the check did: fresh, got %q", hint)
		}
		db.Exec(t, `SELECT fn_queue_heartbeat_write('victim', '{}', 'test')`) // the live executor beats
		if out := staleCheck(t, db.Pool); num(t, out, "stale") != 0 || num(t, out, "ahead_reset") != 0 {
			t.Fatalf("a live executor after the step: %v", out)
		}
		if n := alerts(t, db, "queue_worker_silent"); n != 0 {
			t.Fatalf("%d silent alerts for a live executor whose stamp was ahead", n)
		}
	})
	t.Run("a dead executor is alerted one threshold after the reset", func(t *testing.T) {
		t.Parallel()
		db := stepped(t)
		staleCheck(t, db.Pool)
		silence(t, db, "victim", 31) // a threshold (30 s) and a second pass, no beat
		out := staleCheck(t, db.Pool)
		if num(t, out, "stale") != 1 || num(t, out, "emitted") != 1 {
			t.Fatalf("a dead executor must be alerted one threshold after its stamp was reset: %v", out)
		}
		var age int
		db.QueryRow(t, `SELECT (safe_payload->>'age_seconds')::int FROM event_outbox
		                 WHERE event_type = 'queue_worker_silent' AND event_subject_ref = 'victim'`, nil, &age)
		if age < 31 {
			t.Fatalf("the alert's age must be counted from the reset: %d s", age)
		}
	})
	t.Run("a stamp the check cannot reset is alerted, and only a beat ends it", func(t *testing.T) {
		t.Parallel()
		db := stepped(t)
		tx := holdRow(t, db, "victim")
		out := staleCheck(t, db.Pool)
		if num(t, out, "ahead_reset") != 0 || num(t, out, "stale") != 1 || num(t, out, "emitted") != 1 {
			t.Fatalf("a held row with a stamp ahead must be judged as it stands (stale) and alerted: %v", out)
		}
		var early bool
		db.QueryRow(t, `SELECT (safe_payload->>'silent_since')::timestamptz <= clock_timestamp()
		                  FROM event_outbox WHERE event_type = 'queue_worker_silent' AND event_subject_ref = 'victim'`, nil, &early)
		if !early {
			t.Fatal("silent_since must not lie in the future: a silence behind a stamp ahead is counted from when it is noticed")
		}
		if err := tx.Rollback(ctx(t)); err != nil {
			t.Fatal(err)
		}
		// Released: the check resets the stamp; that is no beat, so the silence stays open,
		// through the reset stamp's fresh threshold too.
		if out := staleCheck(t, db.Pool); num(t, out, "ahead_reset") != 1 || num(t, out, "recovered") != 0 {
			t.Fatalf("the reset is no beat: %v", out)
		}
		if out := staleCheck(t, db.Pool); num(t, out, "recovered") != 0 {
			t.Fatalf("a reset stamp inside its threshold ends nothing: %v", out)
		}
		if n := count(t, db, `SELECT count(*) FROM queue_stale_alert WHERE executor_id = 'victim' AND alerted_at IS NOT NULL`); n != 1 {
			t.Fatal("the victim's open alert was cleared")
		}
		db.Exec(t, `SELECT fn_queue_heartbeat_write('victim', '{}', 'test')`) // now it beats
		out = staleCheck(t, db.Pool)
		if num(t, out, "recovered") != 1 {
			t.Fatalf("a beat after the reset ends the silence: %v", out)
		}
		var reason string
		db.QueryRow(t, `SELECT safe_payload->>'reason' FROM event_outbox WHERE event_type = 'queue_worker_recovered' AND event_subject_ref = 'victim'`, nil, &reason)
		if reason != "beat" {
			t.Fatalf("the recovery must be reported as a beat, got %q", reason)
		}
	})
	t.Run("a beat ends a silence alerted behind a stamp ahead, though its stamp is earlier", func(t *testing.T) {
		t.Parallel()
		db := stepped(t)
		tx := holdRow(t, db, "victim")
		if out := staleCheck(t, db.Pool); num(t, out, "emitted") != 1 {
			t.Fatalf("a held row with a stamp ahead must be alerted: %v", out)
		}
		if err := tx.Rollback(ctx(t)); err != nil {
			t.Fatal(err)
		}
		// It beats before any check resets its stamp: the new stamp is two hours earlier
		// than the one alerted, and it is a beat.
		db.Exec(t, `SELECT fn_queue_heartbeat_write('victim', '{}', 'test')`)
		if out := staleCheck(t, db.Pool); num(t, out, "recovered") != 1 {
			t.Fatalf("a beat stamped earlier than the alerted stamp (which was ahead) ends the silence: %v", out)
		}
	})
	t.Run("the assessment's ahead half is the ahead rule", func(t *testing.T) {
		t.Parallel()
		db := pgtest.NewDB(t)
		// fn_queue_heartbeat_is_stale writes fn_queue_heartbeat_is_ahead's rule out (the view's
		// reader may not name iu_core); with a threshold no offset here reaches, the two must
		// agree on every offset around the bound.
		var differ []int32
		db.QueryRow(t, `SELECT coalesce(array_agg(s ORDER BY s), '{}')
		                  FROM generate_series(-120, 120) s,
		                       LATERAL (SELECT statement_timestamp() AS at) n
		                 WHERE iu_core.fn_queue_heartbeat_is_stale(n.at + make_interval(secs => s), 100000, 0, n.at)
		                       IS DISTINCT FROM iu_core.fn_queue_heartbeat_is_ahead(n.at + make_interval(secs => s), n.at)`, nil, &differ)
		if len(differ) != 0 {
			t.Fatalf("the staleness assessment and the ahead rule disagree at offsets %v s", differ)
		}
		var at60, at61 bool
		db.QueryRow(t, `SELECT iu_core.fn_queue_heartbeat_is_ahead(now() + interval '60 seconds', now()),
		                       iu_core.fn_queue_heartbeat_is_ahead(now() + interval '61 seconds', now())`, nil, &at60, &at61)
		if at60 || !at61 {
			t.Fatalf("ahead means more than 60 s ahead: 60 s %v, 61 s %v", at60, at61)
		}
	})
	t.Run("a runner's stamp ahead holds no lease", func(t *testing.T) {
		t.Parallel()
		db := pgtest.NewDB(t)
		runner, _ := login(t, db, "run", "dot_executor")
		const a, b = "00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"
		beat := func(instance string) obj {
			return callJSON(t, runner, `SELECT fn_queue_runner_beat('iu-runner:h1', $1::uuid, 'ok', '{}')`, instance)
		}
		if out := beat(a); out["beat"] != true {
			t.Fatalf("the first runner's beat: %v", out)
		}
		// Its last beat was stamped two hours ahead, and it died: a standby must take over
		// instead of waiting two hours for the lease to run out.
		silence(t, db, "iu-runner:h1", -7200)
		if out := beat(b); out["took_over"] != true {
			t.Fatalf("a standby must take over a lease whose stamp is two hours ahead of the clock: %v", out)
		}
		// A stamp a few seconds ahead (a beat that committed after the judge's transaction
		// began) still holds the lease.
		db.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now() + interval '5 seconds' WHERE executor_id = 'iu-runner:h1'`)
		if out := beat(a); out["held"] != true {
			t.Fatalf("a stamp 5 s ahead still holds the lease: %v", out)
		}
	})
}

// holdRow locks an executor's heartbeat row in a transaction of its own, rolled back at the
// test's end at the latest (a session that keeps the row, as a beat in progress would).
func holdRow(t *testing.T, db *pgtest.DB, id string) pgx.Tx {
	t.Helper()
	tx, err := db.Conn(t).Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	if _, err := tx.Exec(ctx(t), `SELECT 1 FROM queue_heartbeat WHERE executor_id = $1 FOR UPDATE`, id); err != nil {
		t.Fatal(err)
	}
	return tx
}

// heartbeatHint is the executor's status_hint in v_queue_health.
func heartbeatHint(t *testing.T, db *pgtest.DB, id string) string {
	t.Helper()
	var hint string
	db.QueryRow(t, `SELECT status_hint FROM v_queue_health WHERE source = 'heartbeat' AND subject = $1`, []any{id}, &hint)
	return hint
}
