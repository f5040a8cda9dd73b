package jobqueue

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// leased is one claimed job as a worker sees it.
type leased struct {
	ID, Token, Kind string
	Attempt         int
}

// claimTokens claims up to limit jobs of the given kinds with the lease in seconds.
func claimTokens(t testing.TB, q querier, worker string, kinds []string, limit, lease int) []leased {
	t.Helper()
	var ids, tokens, ks []string
	var attempts []int32
	err := q.QueryRow(ctx(t), `
		SELECT coalesce(array_agg(job_id::text ORDER BY process_after, job_id), '{}'),
		       coalesce(array_agg(lease_token::text ORDER BY process_after, job_id), '{}'),
		       coalesce(array_agg(job_kind ORDER BY process_after, job_id), '{}'),
		       coalesce(array_agg(attempt ORDER BY process_after, job_id), '{}')
		  FROM fn_job_claim($1, $2, $3, $4)`, worker, kinds, limit, lease).Scan(&ids, &tokens, &ks, &attempts)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]leased, len(ids))
	for i := range ids {
		out[i] = leased{ID: ids[i], Token: tokens[i], Kind: ks[i], Attempt: int(attempts[i])}
	}
	return out
}

// expire moves a job's lease into the past (the clock is moved, nobody sleeps).
func expire(t testing.TB, db *pgtest.DB, ids ...string) {
	t.Helper()
	db.Exec(t, `UPDATE job_queue SET lease_expires_at = now() - interval '1 second' WHERE job_id = ANY($1::uuid[])`, ids)
}

func jobStatus(t testing.TB, db *pgtest.DB, id string) (status string, attempt int) {
	t.Helper()
	db.QueryRow(t, `SELECT status, attempt FROM job_queue WHERE job_id = $1`, []any{id}, &status, &attempt)
	return status, attempt
}

const lost = `{"refused": true, "reason": "lease_lost"}`

// Fencing: two sessions share the worker name "w". Session 1 claims, stalls past its lease,
// the reaper requeues the job and session 2 claims it under the same name. Session 1's late
// complete, fail and extend (with its own token) are refused; session 2's complete is
// accepted. Names alone cannot tell the two apart: the per-claim token does.
func TestJobFencing_StaleHolderWithSameNameRefused(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	id := enqueue(t, db.Pool, "k")
	s1, s2 := db.Conn(t), db.Conn(t)
	first := claimTokens(t, s1, "w", []string{"k"}, 1, 60)
	if len(first) != 1 || first[0].ID != id {
		t.Fatalf("session 1 claimed %v", first)
	}
	expire(t, db, id) // session 1 stalls past its lease
	if out := callJSON(t, db.Pool, `SELECT fn_job_reap_expired_leases()`); num(t, out, "requeued") != 1 {
		t.Fatalf("reap: %v", out)
	}
	second := claimTokens(t, s2, "w", []string{"k"}, 1, 60)
	if len(second) != 1 || second[0].ID != id || second[0].Token == first[0].Token || second[0].Attempt != 2 {
		t.Fatalf("session 2 claimed %v after %v", second, first)
	}
	requireJSONEqual(t, callJSON(t, s1, `SELECT fn_job_complete($1, 'w', $2::uuid)`, id, first[0].Token), lost)
	requireJSONEqual(t, callJSON(t, s1, `SELECT fn_job_fail($1, 'w', 'late', $2::uuid)`, id, first[0].Token), lost)
	requireJSONEqual(t, callJSON(t, s1, `SELECT fn_job_extend_lease($1, 'w', $2::uuid, 60)`, id, first[0].Token), lost)
	out := callJSON(t, s1, `SELECT fn_job_complete_many('w', ARRAY[$1::uuid], ARRAY[$2::uuid])`, id, first[0].Token)
	if num(t, out, "completed") != 0 || num(t, out, "refused") != 1 {
		t.Fatalf("stale batch complete: %v", out)
	}
	if st, att := jobStatus(t, db, id); st != "running" || att != 2 {
		t.Fatalf("after the stale holder: %s attempt %d", st, att)
	}
	if out := callJSON(t, s2, `SELECT fn_job_complete($1, 'w', $2::uuid)`, id, second[0].Token); out["completed"] != true || out["already"] != nil {
		t.Fatalf("current holder refused: %v", out)
	}
}

// Fencing: a token is good for its own job, its own worker and its own claim only. A token
// from another claim, the right token with another worker name, and a made-up token are all
// refused and change nothing; the legacy name-only forms still work for the holder's name.
func TestJobFencing_ForeignTokenRefused(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	a, b := enqueue(t, db.Pool, "k"), enqueue(t, db.Pool, "k")
	ca := claimTokens(t, db.Conn(t), "wa", []string{"k"}, 1, 60)
	cb := claimTokens(t, db.Conn(t), "wb", []string{"k"}, 1, 60)
	if len(ca) != 1 || len(cb) != 1 || ca[0].ID != a || cb[0].ID != b {
		t.Fatalf("claims %v %v", ca, cb)
	}
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_job_complete($1, 'wa', $2::uuid)`, a, cb[0].Token), lost)
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_job_complete($1, 'wb', $2::uuid)`, a, ca[0].Token), lost)
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_job_complete($1, 'wa', gen_random_uuid())`, a), lost)
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_job_fail($1, 'wa', 'x', $2::uuid)`, a, cb[0].Token), lost)
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_job_extend_lease($1, 'wa', $2::uuid)`, a, cb[0].Token), lost)
	out := callJSON(t, db.Pool, `SELECT fn_job_complete_many('wa', ARRAY[$1::uuid, $2::uuid], ARRAY[$3::uuid, $4::uuid])`, a, b, cb[0].Token, ca[0].Token)
	if num(t, out, "completed") != 0 || num(t, out, "refused") != 2 {
		t.Fatalf("swapped tokens in a batch: %v", out)
	}
	for _, id := range []string{a, b} {
		if st, att := jobStatus(t, db, id); st != "running" || att != 1 {
			t.Fatalf("job %s touched by a refused call: %s %d", id, st, att)
		}
	}
	pgtest.RequireSQLState(t, callErr(t, db.Pool, `SELECT fn_job_complete($1, 'wa', NULL::uuid)`, a), "22023")
	pgtest.RequireSQLState(t, callErr(t, db.Pool, `SELECT fn_job_complete(gen_random_uuid(), 'wa', gen_random_uuid())`), "P0002")
	// The legacy two-argument form (name only) still completes for the holder's name.
	if out := callJSON(t, db.Pool, `SELECT fn_job_complete($1, 'wb')`, b); out["completed"] != true {
		t.Fatalf("legacy complete: %v", out)
	}
}

// Idempotency: a complete retried with the token of the attempt that succeeded (its first
// answer lost) is told {"completed": true, "already": true}, single or batch; a retried
// complete after the job was re-claimed (another attempt) is lease_lost.
func TestJobFencing_RepeatedCompleteIsIdempotent(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	a, b := enqueue(t, db.Pool, "k"), enqueue(t, db.Pool, "k")
	c := claimTokens(t, db.Pool, "w", []string{"k"}, 2, 60)
	if len(c) != 2 {
		t.Fatalf("claimed %v", c)
	}
	tok := map[string]string{c[0].ID: c[0].Token, c[1].ID: c[1].Token}
	if out := callJSON(t, db.Pool, `SELECT fn_job_complete($1, 'w', $2::uuid)`, a, tok[a]); out["completed"] != true {
		t.Fatalf("first complete: %v", out)
	}
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_job_complete($1, 'w', $2::uuid)`, a, tok[a]), `{"completed": true, "already": true}`)
	out := callJSON(t, db.Pool, `SELECT fn_job_complete_many('w', ARRAY[$1::uuid, $2::uuid], ARRAY[$3::uuid, $4::uuid])`, a, b, tok[a], tok[b])
	requireJSONEqual(t, out, `{"completed": 1, "already": 1, "refused": 0, "refused_jobs": []}`)
	out = callJSON(t, db.Pool, `SELECT fn_job_complete_many('w', ARRAY[$1::uuid, $2::uuid], ARRAY[$3::uuid, $4::uuid])`, a, b, tok[a], tok[b])
	requireJSONEqual(t, out, `{"completed": 0, "already": 2, "refused": 0, "refused_jobs": []}`)
	// Another token for a succeeded job is not the same complete: refused.
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_job_complete($1, 'w', gen_random_uuid())`, a), lost)
}

// Renewal: a job that runs longer than its lease stays with its worker while the worker
// extends the lease, even with a reaper running all along in another session; it is
// claimed once (attempt 1) and completed by its holder. The control job, same lease, never
// extended, is requeued by the same reaper.
func TestJobFencing_ExtendKeepsLongJobFromRequeue(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	long := enqueue(t, db.Pool, "long")
	control := enqueue(t, db.Pool, "control")
	worker, reaperConn := db.Conn(t), db.Conn(t)
	c := claimTokens(t, worker, "w", []string{"long"}, 1, 1)
	cc := claimTokens(t, db.Pool, "w2", []string{"control"}, 1, 1)
	if len(c) != 1 || len(cc) != 1 {
		t.Fatalf("claims %v %v", c, cc)
	}
	stop := make(chan struct{})
	var reaped atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the reaper, as the runner would run it, only faster
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			var raw []byte
			if err := reaperConn.QueryRow(ctx(t), `SELECT fn_job_reap_expired_leases()`).Scan(&raw); err != nil {
				t.Error(err)
				return
			}
			reaped.Add(1)
		}
	}()
	// The job "works" for 3 s on a 1 s lease, renewing it every 300 ms.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		out := callJSON(t, worker, `SELECT fn_job_extend_lease($1, 'w', $2::uuid, 1)`, long, c[0].Token)
		if out["extended"] != true {
			t.Fatalf("extend refused while holding the lease: %v", out)
		}
		time.Sleep(300 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if reaped.Load() < 10 {
		t.Fatalf("the reaper ran only %d times", reaped.Load())
	}
	if st, att := jobStatus(t, db, long); st != "running" || att != 1 {
		t.Fatalf("long job: %s attempt %d, want running attempt 1", st, att)
	}
	if out := callJSON(t, worker, `SELECT fn_job_complete($1, 'w', $2::uuid)`, long, c[0].Token); out["completed"] != true {
		t.Fatalf("complete after renewals: %v", out)
	}
	if st, _ := jobStatus(t, db, control); st != "queued" {
		t.Fatalf("control job (never extended) is %s, want queued by the reaper", st)
	}
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_job_extend_lease($1, 'w2', $2::uuid)`, control, cc[0].Token), lost)
	pgtest.RequireSQLState(t, callErr(t, db.Pool, `SELECT fn_job_extend_lease($1, 'w', $2::uuid, 0)`, long, c[0].Token), "22023")
}

// Batches refuse exactly the lost ones: of ten claimed jobs, three are lost (two reaped and
// re-claimed by another session, one expired), one id does not exist; complete_many
// completes the other seven and names exactly the four refused, with their reasons.
// fail_many does the same for failures, and sends an out-of-attempts job to the dead letters.
func TestJobBatches_RefuseExactlyTheLostOnes(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	for range 10 {
		enqueue(t, db.Pool, "k")
	}
	c := claimTokens(t, db.Conn(t), "w", []string{"k"}, 10, 60)
	if len(c) != 10 {
		t.Fatalf("claimed %d", len(c))
	}
	expire(t, db, c[0].ID, c[1].ID)
	callJSON(t, db.Pool, `SELECT fn_job_reap_expired_leases()`)
	if again := claimTokens(t, db.Conn(t), "w", []string{"k"}, 10, 60); len(again) != 2 {
		t.Fatalf("re-claimed %v", again)
	}
	expire(t, db, c[2].ID)
	ids, toks := []string{}, []string{}
	for _, j := range c {
		ids, toks = append(ids, j.ID), append(toks, j.Token)
	}
	ghost := "00000000-0000-0000-0000-000000000001"
	ids, toks = append(ids, ghost), append(toks, ghost)
	out := callJSON(t, db.Pool, `SELECT fn_job_complete_many('w', $1::uuid[], $2::uuid[])`, ids, toks)
	if num(t, out, "completed") != 7 || num(t, out, "already") != 0 || num(t, out, "refused") != 4 {
		t.Fatalf("complete_many: %v", out)
	}
	want := map[string]string{c[0].ID: "lease_lost", c[1].ID: "lease_lost", c[2].ID: "lease_lost", ghost: "not_found"}
	got := map[string]string{}
	for _, r := range out["refused_jobs"].([]any) {
		m := r.(map[string]any)
		got[m["job_id"].(string)] = m["reason"].(string)
	}
	if len(got) != len(want) {
		t.Fatalf("refused %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("refused %v, want %v", got, want)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM job_queue WHERE status = 'succeeded'`); n != 7 {
		t.Fatalf("succeeded: %d", n)
	}

	// fail_many: three claimed, one with a single attempt (dead), one lost.
	db.Exec(t, `DELETE FROM job_queue`)
	r1, r2 := enqueue(t, db.Pool, "f", "dk-f1", 3), enqueue(t, db.Pool, "f", "dk-f2", 1)
	r3 := enqueue(t, db.Pool, "f")
	f := claimTokens(t, db.Pool, "w", []string{"f"}, 3, 60)
	tokOf := map[string]string{}
	for _, j := range f {
		tokOf[j.ID] = j.Token
	}
	expire(t, db, r3)
	out = callJSON(t, db.Pool, `SELECT fn_job_fail_many('w', ARRAY[$1, $2, $3]::uuid[], ARRAY[$4, $5, $6]::uuid[], ARRAY['e1', 'e2', 'e3'])`,
		r1, r2, r3, tokOf[r1], tokOf[r2], tokOf[r3])
	if num(t, out, "failed") != 2 || num(t, out, "retrying") != 1 || num(t, out, "dead") != 1 || num(t, out, "refused") != 1 {
		t.Fatalf("fail_many: %v", out)
	}
	if st, _ := jobStatus(t, db, r1); st != "queued" {
		t.Fatalf("r1: %s", st)
	}
	if n := count(t, db, `SELECT count(*) FROM job_dead_letter WHERE job_id = $1 AND last_error = 'e2'`, r2); n != 1 {
		t.Fatalf("dead letter of r2: %d", n)
	}
	if st, _ := jobStatus(t, db, r3); st != "running" {
		t.Fatalf("the lost job r3 was touched: %s", st)
	}
	var delay float64
	db.QueryRow(t, `SELECT extract(epoch FROM process_after - now()) FROM job_queue WHERE job_id = $1`, []any{r1}, &delay)
	if delay < 3.75-1 || delay > 6.25 {
		t.Fatalf("r1 backoff %v s, want 5 s +-25%%", delay)
	}
	for _, bad := range []string{
		`SELECT fn_job_complete_many('w', ARRAY[gen_random_uuid()], '{}'::uuid[])`,
		`SELECT fn_job_complete_many('w', ARRAY[NULL::uuid], ARRAY[gen_random_uuid()])`,
		`SELECT fn_job_complete_many('', '{}'::uuid[], '{}'::uuid[])`,
		`SELECT fn_job_fail_many('w', ARRAY[gen_random_uuid()], ARRAY[gen_random_uuid()], ARRAY['a', 'b'])`,
	} {
		pgtest.RequireSQLState(t, callErr(t, db.Pool, bad), "22023")
	}
}

// Batch claim under contention: eight sessions claiming 25 at a time from 1,000 jobs take
// every job exactly once, none waits for another (SKIP LOCKED), and the batch completes
// leave nothing running.
func TestJobBatches_ConcurrentClaimCompleteEachJobOnce(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	db.Exec(t, `SELECT fn_job_enqueue_many('k', 'iu', (SELECT jsonb_agg(jsonb_build_object('n', g)) FROM generate_series(1, 1000) g))`)
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for w := range 8 {
		conn := db.Conn(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "w" + string(rune('a'+w))
			for {
				got := claimTokens(t, conn, name, []string{"k"}, 25, 60)
				if len(got) == 0 {
					return
				}
				ids, toks := make([]string, len(got)), make([]string, len(got))
				for i, j := range got {
					ids[i], toks[i] = j.ID, j.Token
				}
				var raw []byte
				if err := conn.QueryRow(ctx(t), `SELECT fn_job_complete_many($1, $2::uuid[], $3::uuid[])`, name, ids, toks).Scan(&raw); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, id := range ids {
					seen[id]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 1000 {
		t.Fatalf("claimed %d distinct jobs, want 1000", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("job %s claimed %d times", id, n)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM job_queue WHERE status = 'succeeded' AND attempt = 1`); n != 1000 {
		t.Fatalf("succeeded at attempt 1: %d", n)
	}
}

// Idempotency (issue 22, item 5): a fail retried with the token of the attempt that failed
// (its first answer lost) is told {"failed": true, "already": true, ...}, single or batch
// (counted as already), and changes nothing more: the attempt stays, the backoff stays, a
// dead job gets no second dead letter. It is lease_lost once the job was claimed again (the
// token is another claim's now) and when the lease ran out and was reaped before the fail
// (the fail never happened then).
func TestJobFencing_RepeatedFailIsIdempotent(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	retry, dead := enqueue(t, db.Pool, "f", "dk-r", 3), enqueue(t, db.Pool, "f", "dk-d", 1)
	c := claimTokens(t, db.Pool, "w", []string{"f"}, 2, 60)
	if len(c) != 2 {
		t.Fatalf("claimed %v", c)
	}
	tok := map[string]string{c[0].ID: c[0].Token, c[1].ID: c[1].Token}
	if out := callJSON(t, db.Pool, `SELECT fn_job_fail($1, 'w', 'boom', $2::uuid)`, retry, tok[retry]); out["failed"] != true || out["dead"] != false {
		t.Fatalf("first fail: %v", out)
	}
	if out := callJSON(t, db.Pool, `SELECT fn_job_fail($1, 'w', 'boom', $2::uuid)`, dead, tok[dead]); out["dead"] != true {
		t.Fatalf("first fail of the one-attempt job: %v", out)
	}
	var after string
	db.QueryRow(t, `SELECT process_after::text FROM job_queue WHERE job_id = $1`, []any{retry}, &after)
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_job_fail($1, 'w', 'boom', $2::uuid)`, retry, tok[retry]),
		`{"failed": true, "already": true, "job_id": "`+retry+`", "status": "queued"}`)
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_job_fail($1, 'w', 'boom', $2::uuid)`, dead, tok[dead]),
		`{"failed": true, "already": true, "job_id": "`+dead+`", "status": "dead"}`)
	out := callJSON(t, db.Pool, `SELECT fn_job_fail_many('w', ARRAY[$1, $2]::uuid[], ARRAY[$3, $4]::uuid[], ARRAY['boom'])`,
		retry, dead, tok[retry], tok[dead])
	requireJSONEqual(t, out, `{"failed": 0, "retrying": 0, "dead": 0, "already": 2, "refused": 0, "refused_jobs": []}`)
	var again string
	db.QueryRow(t, `SELECT process_after::text FROM job_queue WHERE job_id = $1`, []any{retry}, &again)
	if st, attempt := jobStatus(t, db, retry); st != "queued" || attempt != 1 || again != after {
		t.Fatalf("a retried fail changed the job: %s attempt %d, due %s (was %s)", st, attempt, again, after)
	}
	if n := count(t, db, `SELECT count(*) FROM job_dead_letter WHERE job_id = $1`, dead); n != 1 {
		t.Fatalf("dead letters of the dead job after the retried fails: %d, want 1", n)
	}
	// Another token is not the same fail.
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_job_fail($1, 'w', 'boom', gen_random_uuid())`, retry), lost)
	// Claimed again: the old token's fail is lease_lost (the job is another claim's).
	db.Exec(t, `UPDATE job_queue SET process_after = now() WHERE job_id = $1`, retry)
	if c2 := claimTokens(t, db.Pool, "w2", []string{"f"}, 1, 60); len(c2) != 1 || c2[0].ID != retry {
		t.Fatalf("re-claim: %v", c2)
	}
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_job_fail($1, 'w', 'boom', $2::uuid)`, retry, tok[retry]), lost)
	// Reaped before the fail: the fail never happened, so it is lease_lost, not already.
	late := enqueue(t, db.Pool, "g")
	lc := claimTokens(t, db.Pool, "w", []string{"g"}, 1, 60)
	expire(t, db, late)
	callJSON(t, db.Pool, `SELECT fn_job_reap_expired_leases()`)
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_job_fail($1, 'w', 'late', $2::uuid)`, late, lc[0].Token), lost)
}
