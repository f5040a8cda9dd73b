package jobqueue

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule: a refused complete, fail or extend changes nothing, and that includes the row lock.
// Any executor can learn a live job's id (fn_job_enqueue with the job's dedupe key answers
// it and enqueues nothing); the attack is to call fn_job_complete / fn_job_fail /
// fn_job_extend_lease on it with a token it does not hold, in a transaction it leaves open.
// Before the fix fn_job_lease_row locked the row and tested the lease after, so the refused
// call held the job: the holder's own complete waited out its 5 s lock_timeout (55P03),
// the reaper (SKIP LOCKED) passed the expired lease by, and a queued job was skipped by
// every claim, for as long as the attacker's transaction lived. Here, with each refused
// call still open, the holder completes, fails and extends its own jobs at once, the
// reaper takes back an expired lease, and a queued job is claimed.
func TestJobTrust_ARefusedCallHoldsNoLock(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	holder, _ := login(t, db, "hold", "dot_executor")
	attacker, _ := login(t, db, "atk", "dot_executor")

	// attack opens a transaction on the attacker's session, makes one refused call in it
	// and leaves it open until the test ends.
	attack := func(t *testing.T, sql string, args ...any) {
		t.Helper()
		tx, err := attacker.Begin(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
		requireJSONEqual(t, callJSON(t, tx, sql, args...), lost)
	}
	// holderCall runs the holder's own call under a 1 s lock_timeout, so a lock the refused
	// call kept fails the test at once (55P03) instead of waiting.
	holderCall := func(t *testing.T, sql string, args ...any) pgtest.Obj {
		t.Helper()
		tx, err := holder.Begin(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(context.Background()) }()
		if _, err := tx.Exec(ctx(t), `SET LOCAL lock_timeout = '1s'`); err != nil {
			t.Fatal(err)
		}
		out := callJSON(t, tx, sql, args...)
		if err := tx.Commit(ctx(t)); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// each job gets its own key, so the attacker learns its id the way any executor can.
	learn := func(t *testing.T, key string) string {
		t.Helper()
		var id string
		if err := attacker.QueryRow(ctx(t), `SELECT fn_job_enqueue('k', 'iu', '{}', now(), $1)::text`, key).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	claimOne := func(t *testing.T, c *pgx.Conn, lease int) leased {
		t.Helper()
		got := claimTokens(t, c, "w", []string{"k"}, 1, lease)
		if len(got) != 1 {
			t.Fatalf("claimed %d jobs, want 1", len(got))
		}
		return got[0]
	}

	t.Run("the holder completes under a refused complete", func(t *testing.T) {
		enqueue(t, db.Pool, "k", "key:complete", 5)
		job := claimOne(t, holder, 60)
		attack(t, `SELECT fn_job_complete($1::uuid, 'w', gen_random_uuid())`, learn(t, "key:complete"))
		out := holderCall(t, `SELECT fn_job_complete($1::uuid, 'w', $2::uuid)`, job.ID, job.Token)
		if out["completed"] != true {
			t.Fatalf("the holder's complete answered %v", out)
		}
	})
	t.Run("the holder fails under a refused fail", func(t *testing.T) {
		enqueue(t, db.Pool, "k", "key:fail", 5)
		job := claimOne(t, holder, 60)
		attack(t, `SELECT fn_job_fail($1::uuid, 'w', 'forged', gen_random_uuid())`, learn(t, "key:fail"))
		out := holderCall(t, `SELECT fn_job_fail($1::uuid, 'w', 'real', $2::uuid)`, job.ID, job.Token)
		if out["failed"] != true {
			t.Fatalf("the holder's fail answered %v", out)
		}
	})
	t.Run("the holder extends under a refused extend, and the reaper takes an expired lease back", func(t *testing.T) {
		enqueue(t, db.Pool, "k", "key:extend", 5)
		job := claimOne(t, holder, 60)
		attack(t, `SELECT fn_job_extend_lease($1::uuid, 'w', gen_random_uuid(), 60)`, learn(t, "key:extend"))
		out := holderCall(t, `SELECT fn_job_extend_lease($1::uuid, 'w', $2::uuid, 120)`, job.ID, job.Token)
		if out["extended"] != true {
			t.Fatalf("the holder's extend answered %v", out)
		}
		expire(t, db, job.ID)
		// Another refused call on the expired lease, still open: the reaper must not skip it.
		attack(t, `SELECT fn_job_complete($1::uuid, 'w', gen_random_uuid())`, job.ID)
		reaped := callJSON(t, db.Pool, `SELECT fn_job_reap_expired_leases()`)
		if st, _ := jobStatus(t, db, job.ID); st != "queued" {
			t.Fatalf("an expired lease under a refused call's open transaction was not reaped: %v, job %s", reaped, st)
		}
		// Leave the queue empty for the next case.
		again := claimOne(t, holder, 60)
		requireJSONEqual(t, callJSON(t, holder, `SELECT fn_job_complete($1::uuid, 'w', $2::uuid) - 'job_id' - 'attempt' - 'worker' - 'status'`, again.ID, again.Token), `{"completed": true}`)
	})
	t.Run("a queued job is claimed under a refused call", func(t *testing.T) {
		victim := enqueue(t, db.Pool, "k", "key:queued", 5)
		attack(t, `SELECT fn_job_extend_lease($1::uuid, 'x', gen_random_uuid(), 60)`, learn(t, "key:queued"))
		got := claimTokens(t, holder, "w", []string{"k"}, 10, 60)
		if len(got) != 1 || got[0].ID != victim {
			st, _ := jobStatus(t, db, victim)
			t.Fatalf("a due queued job was skipped by every claim while a refused call's transaction stayed open: claimed %v, job %s", got, st)
		}
	})
}
