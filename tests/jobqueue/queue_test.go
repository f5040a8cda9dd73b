package jobqueue

import (
	"strings"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule: the dedupe key is unique while the job is live: enqueueing it again returns the
// live job; once the job has finished the key is free again.
func TestJobs_EnqueueDedupesWhileLive(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	a := enqueue(t, db.Pool, "k", "dk-1", 5)
	if b := enqueue(t, db.Pool, "k", "dk-1", 5); b != a {
		t.Fatalf("duplicate live job: %s vs %s", a, b)
	}
	got := claim(t, db.Pool, "w1", 10)
	if len(got) != 1 || got[0] != a {
		t.Fatalf("claimed %v", got)
	}
	if b := enqueue(t, db.Pool, "k", "dk-1", 5); b != a {
		t.Fatalf("a running job is live too: got %s", b)
	}
	callJSON(t, db.Pool, `SELECT fn_job_complete($1, 'w1')`, a)
	if c := enqueue(t, db.Pool, "k", "dk-1", 5); c == a {
		t.Fatal("a finished job must free its dedupe key")
	}
	e := pgtest.RequireSQLState(t, callErr(t, db.Pool, `SELECT fn_job_enqueue('k', 'iu', '{"x": {"password": 1}}')`), "22023")
	if !strings.HasPrefix(e.Message, "fn_job_enqueue: p_payload carries denylisted keys at $.x.password") {
		t.Errorf("message = %q", e.Message)
	}
	pgtest.RequireSQLState(t, callErr(t, db.Pool, `SELECT fn_job_enqueue('', 'iu')`), "22023")
}

// Rule: two claimers in concurrent transactions get disjoint jobs, and the second does
// not wait for the first (FOR UPDATE SKIP LOCKED).
func TestJobs_ConcurrentClaimersDisjointWithoutBlocking(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	for range 10 {
		enqueue(t, db.Pool, "k")
	}
	a, b := db.Conn(t), db.Conn(t)
	txA, err := a.Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer txA.Rollback(ctx(t))
	gotA := claim(t, txA, "wa", 6)
	if _, err := b.Exec(ctx(t), `SET lock_timeout = '2s'`); err != nil {
		t.Fatal(err)
	}
	txB, err := b.Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer txB.Rollback(ctx(t))
	began := time.Now()
	gotB := claim(t, txB, "wb", 6) // A's rows are locked and uncommitted: B skips them
	if time.Since(began) > time.Second {
		t.Fatalf("second claimer waited %v", time.Since(began))
	}
	if len(gotA) != 6 || len(gotB) != 4 {
		t.Fatalf("claimed %d + %d, want 6 + 4", len(gotA), len(gotB))
	}
	seen := map[string]bool{}
	for _, id := range append(gotA, gotB...) {
		if seen[id] {
			t.Fatalf("job %s claimed twice", id)
		}
		seen[id] = true
	}
	if err := txA.Commit(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := txB.Commit(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, `SELECT count(*) FROM job_queue WHERE status = 'running' AND attempt = 1`); n != 10 {
		t.Fatalf("running with attempt 1: %d", n)
	}
}

// Rule: a caller without the lease is refused with {"refused": true, "reason": "lease_lost"}
// (another worker, or the holder after its lease expired); the job is left untouched.
func TestJobs_CallerWithoutLeaseRefused(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	id := enqueue(t, db.Pool, "k")
	claim(t, db.Pool, "w1", 1)
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_job_complete($1, 'w2')`, id), `{"refused": true, "reason": "lease_lost"}`)
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_job_fail($1, 'w2', 'boom')`, id), `{"refused": true, "reason": "lease_lost"}`)
	db.Exec(t, `UPDATE job_queue SET lease_expires_at = now() - interval '1 second' WHERE job_id = $1`, id)
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_job_complete($1, 'w1')`, id), `{"refused": true, "reason": "lease_lost"}`)
	var status string
	db.QueryRow(t, `SELECT status FROM job_queue WHERE job_id = $1`, []any{id}, &status)
	if status != "running" {
		t.Fatalf("status = %s", status)
	}
	db.Exec(t, `UPDATE job_queue SET lease_expires_at = now() + interval '1 minute' WHERE job_id = $1`, id)
	if out := callJSON(t, db.Pool, `SELECT fn_job_complete($1, 'w1')`, id); out["completed"] != true {
		t.Fatalf("holder completes: %v", out)
	}
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_job_complete($1, 'w1')`, id), `{"refused": true, "reason": "lease_lost"}`)
	pgtest.RequireSQLState(t, callErr(t, db.Pool, `SELECT fn_job_complete(gen_random_uuid(), 'w1')`), "P0002")
}

// Rule: a restarted claimer — a new session, with the same worker name or another —
// never takes a job again while its lease is live.
func TestJobs_RestartedClaimerNeverTakesLiveLeaseTwice(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	id := enqueue(t, db.Pool, "k")
	first := db.Conn(t)
	if got := claim(t, first, "w1", 5); len(got) != 1 || got[0] != id {
		t.Fatalf("first claim: %v", got)
	}
	first.Close(ctx(t)) // the claimer "crashes"
	for _, w := range []string{"w1", "w2"} {
		if got := claim(t, db.Conn(t), w, 5); len(got) != 0 {
			t.Fatalf("restarted %s took %v while the lease is live", w, got)
		}
	}
	if n := count(t, db, `SELECT attempt FROM job_queue WHERE job_id = $1`, id); n != 1 {
		t.Fatalf("attempt = %d, want 1", n)
	}
}

// Rule: a failure retries with exponential backoff (with jitter) until max_attempts, then
// the job is dead and copied, whole, to job_dead_letter, which is never deleted (IU001);
// an operator replays it as a fresh job or resolves it.
func TestJobs_BackoffThenDeadLetterAndReplay(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	id := enqueue(t, db.Pool, "k", "dk-dead", 3)
	for attempt := 1; attempt <= 3; attempt++ {
		db.Exec(t, `UPDATE job_queue SET process_after = now() WHERE job_id = $1`, id) // due now
		if got := claim(t, db.Pool, "w1", 1); len(got) != 1 {
			t.Fatalf("attempt %d: claimed %v", attempt, got)
		}
		out := callJSON(t, db.Pool, `SELECT fn_job_fail($1, 'w1', 'upstream 503')`, id)
		if num(t, out, "attempt") != float64(attempt) {
			t.Fatalf("attempt %d: %v", attempt, out)
		}
		if attempt < 3 {
			base := 5.0 * float64(int(1)<<(attempt-1))
			b := num(t, out, "backoff_seconds")
			if out["dead"] != false || b < 0.75*base || b >= 1.25*base {
				t.Fatalf("attempt %d: backoff %v outside [%v, %v): %v", attempt, b, 0.75*base, 1.25*base, out)
			}
			var delay float64
			db.QueryRow(t, `SELECT extract(epoch FROM process_after - now()) FROM job_queue WHERE job_id = $1 AND status = 'queued'`, []any{id}, &delay)
			if delay < 0.75*base-1 || delay > 1.25*base {
				t.Fatalf("attempt %d: process_after in %v s", attempt, delay)
			}
			if got := claim(t, db.Pool, "w1", 1); len(got) != 0 {
				t.Fatalf("a backed-off job was claimed early")
			}
			continue
		}
		if out["dead"] != true || out["dead_letter_id"] == nil {
			t.Fatalf("last attempt: %v", out)
		}
	}
	var dlID, snapStatus, lastErr string
	var attempts int
	db.QueryRow(t, `SELECT id::text, job_snapshot->>'status', last_error, attempts FROM job_dead_letter WHERE job_id = $1`, []any{id}, &dlID, &snapStatus, &lastErr, &attempts)
	if snapStatus != "dead" || lastErr != "upstream 503" || attempts != 3 {
		t.Fatalf("dead letter: %s %s %d", snapStatus, lastErr, attempts)
	}
	for _, stmt := range []string{`DELETE FROM job_dead_letter`, `TRUNCATE job_dead_letter`, `UPDATE job_dead_letter SET last_error = 'rewritten'`} {
		pgtest.RequireSQLState(t, callErr(t, db.Pool, stmt), "IU001")
	}

	rep := callJSON(t, db.Pool, `SELECT fn_job_dead_letter_replay($1, 'ops')`, dlID)
	if rep["replayed"] != true || rep["job_id"] == id {
		t.Fatalf("replay: %v", rep)
	}
	var st, dk, payload string
	var att int
	db.QueryRow(t, `SELECT status, dedupe_key, payload::text, attempt FROM job_queue WHERE job_id = $1`, []any{rep["job_id"]}, &st, &dk, &payload, &att)
	if st != "queued" || dk != "dk-dead" || payload != `{"ref": 1}` || att != 0 {
		t.Fatalf("replayed job: %s %s %s %d", st, dk, payload, att)
	}
	again := callJSON(t, db.Pool, `SELECT fn_job_dead_letter_replay($1, 'ops')`, dlID)
	if again["replayed"] != false || again["reason"] != "already_resolved" {
		t.Fatalf("second replay: %v", again)
	}
	pgtest.RequireSQLState(t, callErr(t, db.Pool, `SELECT fn_job_dead_letter_replay(gen_random_uuid())`), "P0002")
}

// Rule: the reaper sends running jobs whose lease expired back to queued, or to the dead
// letters when out of attempts; live leases are untouched.
func TestJobs_ReaperRequeuesOrDeadLetters(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	retry := enqueue(t, db.Pool, "k", "dk-r", 3)
	last := enqueue(t, db.Pool, "k", "dk-l", 1)
	live := enqueue(t, db.Pool, "k", "dk-v", 3)
	if got := claim(t, db.Pool, "w1", 3); len(got) != 3 {
		t.Fatalf("claimed %v", got)
	}
	db.Exec(t, `UPDATE job_queue SET lease_expires_at = now() - interval '1 second' WHERE job_id IN ($1, $2)`, retry, last)
	out := callJSON(t, db.Pool, `SELECT fn_job_reap_expired_leases()`)
	if num(t, out, "reaped") != 2 || num(t, out, "requeued") != 1 || num(t, out, "dead_lettered") != 1 {
		t.Fatalf("reap: %v", out)
	}
	states := map[string]string{}
	rows, _ := db.Pool.Query(ctx(t), `SELECT job_id::text, status FROM job_queue`)
	for rows.Next() {
		var id, st string
		_ = rows.Scan(&id, &st)
		states[id] = st
	}
	rows.Close()
	if states[retry] != "queued" || states[last] != "dead" || states[live] != "running" {
		t.Fatalf("states: %v", states)
	}
	if n := count(t, db, `SELECT count(*) FROM job_dead_letter WHERE job_id = $1 AND resolved_at IS NULL`, last); n != 1 {
		t.Fatalf("dead letters for the exhausted job: %d", n)
	}
	// The requeued job is due at once and its next claim is attempt 2.
	var ids []string
	if err := db.Pool.QueryRow(ctx(t), `SELECT array_agg(job_id::text) FROM fn_job_claim('w2', '{k}', 5) WHERE attempt = 2`).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != retry {
		t.Fatalf("reclaimed %v", ids)
	}
	if out = callJSON(t, db.Pool, `SELECT fn_job_reap_expired_leases()`); num(t, out, "reaped") != 0 {
		t.Fatalf("second reap: %v", out)
	}
}

// Rule: a job cannot be enqueued ahead of the jobs already waiting. Claims take the oldest
// process_after first, and enqueue accepted any finite time in the past, so an executor
// could put its jobs (one, or a flood of them with fn_job_enqueue_many) before every job
// waiting and starve them. A process_after in the past is stored as now, by both calls
// and with or without a dedupe key: the waiting job is claimed first.
func TestJobs_APastProcessAfterDoesNotJumpTheQueue(t *testing.T) {
	t.Parallel()
	for name, late := range map[string]string{
		"fn_job_enqueue":                 `SELECT fn_job_enqueue('k', 'iu', '{}', '0001-01-01 00:00:00+00')::text`,
		"fn_job_enqueue with a key":      `SELECT fn_job_enqueue('k', 'iu', '{}', now() - interval '1 hour', 'dk-past')::text`,
		"fn_job_enqueue_many":            `SELECT (fn_job_enqueue_many('k', 'iu', '[{}]', '0001-01-01 00:00:00+00'))[1]::text`,
		"fn_job_enqueue_many with a key": `SELECT (fn_job_enqueue_many('k', 'iu', '[{}]', now() - interval '1 hour', '{dk-past}'))[1]::text`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := pgtest.NewDB(t)
			waiting := enqueue(t, db.Pool, "k")
			var jumper string
			db.QueryRow(t, late, nil, &jumper)
			var stored bool
			db.QueryRow(t, `SELECT process_after >= enqueued_at FROM job_queue WHERE job_id = $1::uuid`, []any{jumper}, &stored)
			if !stored {
				t.Fatal("a past process_after was stored as given")
			}
			if got := claim(t, db.Pool, "w1", 1); len(got) != 1 || got[0] != waiting {
				t.Fatalf("claimed %v first, want the job that was waiting (%s), not %s", got, waiting, jumper)
			}
		})
	}
}
