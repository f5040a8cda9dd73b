package queuehealth

import (
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule: the stale-check judges by the clock, so a caller cannot end a silence by calling it
// "in the past". An executor (any dot_executor may run the check) that opened its transaction
// while the victim was still fresh, or made its statement wait on a lock before the call,
// must not get a queue_worker_recovered out of the check once the victim is silent and
// alerted: judged at the transaction's (or the statement's) start the victim looks fresh,
// and the check reported it recovered (reason threshold_raised) and cleared its open alert,
// so the next honest check counted the silence as reported and stayed quiet.
func TestStaleCheck_AnOldClockCannotEndASilence(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// call runs the attacker's stale-check and returns its answer. It is handed a
		// function that makes the victim silent and lets the honest check alert it; call
		// must run that after its own clock is pinned and before its check runs.
		call func(t *testing.T, db *pgtest.DB, goSilent func()) obj
	}{
		{"a transaction opened before the silence", func(t *testing.T, db *pgtest.DB, goSilent func()) obj {
			att, _ := login(t, db, "att", "dot_executor")
			tx, err := att.Begin(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx(t))
			if _, err := tx.Exec(ctx(t), `SELECT now()`); err != nil { // pins the transaction's now()
				t.Fatal(err)
			}
			goSilent()
			out := staleCheck(t, tx)
			if err := tx.Commit(ctx(t)); err != nil {
				t.Fatal(err)
			}
			return out
		}},
		{"a statement held on a lock before the call", func(t *testing.T, db *pgtest.DB, goSilent func()) obj {
			att, attRole := login(t, db, "att", "dot_executor")
			holder := db.Conn(t)
			if _, err := holder.Exec(ctx(t), `SELECT pg_advisory_lock(424242)`); err != nil {
				t.Fatal(err)
			}
			type answer struct {
				out obj
				err error
			}
			done := make(chan answer, 1)
			go func() {
				var out obj
				// The lock is taken by the FROM subquery (a volatile target list is not pulled
				// up), so the statement starts, waits, and only then calls the check.
				err := att.QueryRow(ctx(t), `SELECT fn_queue_stale_check() FROM (SELECT pg_advisory_lock(424242)) l`).Scan(&out)
				done <- answer{out, err}
			}()
			db.WaitUntil(t, 20*time.Second, `SELECT EXISTS (SELECT FROM pg_stat_activity WHERE usename = $1 AND wait_event_type = 'Lock' AND wait_event = 'advisory')`, attRole)
			goSilent()
			if _, err := holder.Exec(ctx(t), `SELECT pg_advisory_unlock(424242)`); err != nil {
				t.Fatal(err)
			}
			a := <-done
			if a.err != nil {
				t.Fatal(a.err)
			}
			return a.out
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db := pgtest.NewDB(t)
			setConfig(t, db, "queue.heartbeat.stale_threshold_seconds", "0")
			register(t, db, "victim", 10, 30)
			// Fresh by 1 s at the attacker's start: last beat 29 s ago, threshold 30 s.
			silence(t, db, "victim", 29)
			goSilent := func() {
				// Real time passes until the victim is stale by the clock (a condition waited
				// for, not a sleep that hopes); then the honest check alerts it.
				db.WaitUntil(t, 20*time.Second, `SELECT clock_timestamp() > last_beat_at + interval '31 seconds' FROM queue_heartbeat WHERE executor_id = $1`, "victim")
				if out := staleCheck(t, db.Pool); num(t, out, "emitted") != 1 {
					t.Fatalf("the honest check must alert the silent victim: %v", out)
				}
			}
			out := c.call(t, db, goSilent)
			if num(t, out, "recovered") != 0 || num(t, out, "stale") != 1 || num(t, out, "suppressed") != 1 {
				t.Fatalf("the attacker's check must find the victim stale, its alert inside the window: %v", out)
			}
			if n := count(t, db, `SELECT count(*) FROM event_outbox WHERE event_type = 'queue_worker_recovered' AND event_subject_ref = 'victim'`); n != 0 {
				t.Fatalf("%d queue_worker_recovered for a victim that never beat", n)
			}
			if n := count(t, db, `SELECT count(*) FROM queue_stale_alert WHERE executor_id = 'victim' AND alerted_at IS NOT NULL`); n != 1 {
				t.Fatal("the victim's open alert was cleared")
			}
			if out := staleCheck(t, db.Pool); num(t, out, "recovered") != 0 || num(t, out, "suppressed") != 1 {
				t.Fatalf("the next honest check still knows the open silence: %v", out)
			}
		})
	}
}
