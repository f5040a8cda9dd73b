package jobqueue

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// login creates a login role in groups for the test (dropped at its end) and connects as it.
func login(t testing.TB, db *pgtest.DB, suffix string, groups ...string) (*pgx.Conn, string) {
	t.Helper()
	role := "jt_" + suffix + "_" + db.Name
	db.Exec(t, `CREATE ROLE `+pgx.Identifier{role}.Sanitize()+` LOGIN PASSWORD 'pw'`)
	for _, g := range groups {
		db.Exec(t, `GRANT `+pgx.Identifier{g}.Sanitize()+` TO `+pgx.Identifier{role}.Sanitize())
	}
	t.Cleanup(func() {
		c := ctx(t)
		_, _ = db.Pool.Exec(c, `DROP OWNED BY `+pgx.Identifier{role}.Sanitize())
		_, _ = db.Pool.Exec(c, `DROP ROLE IF EXISTS `+pgx.Identifier{role}.Sanitize())
	})
	return db.ConnAs(t, role, "pw"), role
}

// Rule (issue 21): the name-only complete and fail forms accept only the login that claimed
// the job. A worker name is a claim any executor can make: before, another login completed
// (or failed) a job it never held by naming the holder's worker, and the holder's work
// was lost or its job dead-lettered. Now it is refused with reason another_login and the
// job stays running; the holder's own login still completes it by name, and the token
// forms are fenced by the token as before.
func TestJobTrust_NameOnlyFormsRefuseAnotherLogin(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	holder, holderRole := login(t, db, "hold", "dot_executor")
	other, _ := login(t, db, "othr", "dot_executor")
	db.Exec(t, `SELECT fn_job_enqueue('k', 'iu') FROM generate_series(1, 2)`)
	jobs := claimTokens(t, holder, "w", []string{"k"}, 2, 60)
	if len(jobs) != 2 {
		t.Fatalf("claimed %d jobs, want 2", len(jobs))
	}
	var who string
	db.QueryRow(t, `SELECT lease_session_user FROM job_queue WHERE job_id = $1`, []any{jobs[0].ID}, &who)
	if who != holderRole {
		t.Fatalf("the claim must record the login that took the lease: %q, want %q", who, holderRole)
	}
	for _, stmt := range []string{
		`SELECT fn_job_complete($1::uuid, 'w')`,
		`SELECT fn_job_fail($1::uuid, 'w', 'sabotage')`,
	} {
		out := callJSON(t, other, stmt, jobs[0].ID)
		requireJSONEqual(t, out, `{"refused": true, "reason": "another_login"}`)
	}
	if st, att := jobStatus(t, db, jobs[0].ID); st != "running" || att != 1 {
		t.Fatalf("a refused call moved the job: %s, attempt %d", st, att)
	}
	if out := callJSON(t, holder, `SELECT fn_job_complete($1::uuid, 'w')`, jobs[0].ID); out["completed"] != true {
		t.Fatalf("the holder's own login completes by name: %v", out)
	}
	if out := callJSON(t, holder, `SELECT fn_job_fail($1::uuid, 'w', 'boom')`, jobs[1].ID); out["failed"] != true {
		t.Fatalf("the holder's own login fails by name: %v", out)
	}
}

// Rule (issue 21): a lease lives at most 24 hours from its claim, however often it is
// extended. Before, each fn_job_extend_lease moved the expiry to now() + p_lease_seconds, so
// a holder (stuck, or squatting a job and its dedupe key) kept it forever and the reaper
// never saw it expire. Here the claim is made 23 h 59 min old (the clock is moved, nobody
// sleeps): an extension by an hour stops at the claim + 24 h and says so.
func TestJobTrust_LeaseExtensionIsBounded(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	exe, _ := login(t, db, "exe", "dot_executor")
	db.Exec(t, `SELECT fn_job_enqueue('k', 'iu')`)
	job := claimTokens(t, exe, "w", []string{"k"}, 1, 60)[0]
	db.Exec(t, `UPDATE job_queue SET leased_at = now() - interval '23 hours 59 minutes' WHERE job_id = $1`, job.ID)
	out := callJSON(t, exe, `SELECT fn_job_extend_lease($1::uuid, 'w', $2::uuid, 3600)`, job.ID, job.Token)
	if out["extended"] != true || out["capped"] != true {
		t.Fatalf("an extension past the bound must be capped and say so: %v", out)
	}
	var left float64
	db.QueryRow(t, `SELECT extract(epoch FROM lease_expires_at - now())::float8 FROM job_queue WHERE job_id = $1`, []any{job.ID}, &left)
	if left > 120 {
		t.Fatalf("the lease runs %.0f s more: it must end 24 h after its claim (about 60 s from now)", left)
	}
	// Within the bound an extension is what it was.
	db.Exec(t, `UPDATE job_queue SET leased_at = now() WHERE job_id = $1`, job.ID)
	out = callJSON(t, exe, `SELECT fn_job_extend_lease($1::uuid, 'w', $2::uuid, 3600)`, job.ID, job.Token)
	if out["capped"] != false {
		t.Fatalf("an extension inside the bound is not capped: %v", out)
	}
	db.QueryRow(t, `SELECT extract(epoch FROM lease_expires_at - now())::float8 FROM job_queue WHERE job_id = $1`, []any{job.ID}, &left)
	if d := time.Duration(left * float64(time.Second)); d < 59*time.Minute {
		t.Fatalf("an extension inside the bound gives the hour asked for, got %v", d)
	}
}

// Rule (issue 21): a job with a dedupe key may be due at most 24 hours ahead. A waiting job
// holds its key, and every later enqueue of that key gets the waiting job's id back: a key
// enqueued 364 days ahead squatted it for 364 days. Refused now (22023, nothing written);
// a job without a key may still wait up to a year.
func TestJobTrust_DedupeKeyHorizonIsBounded(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	exe, _ := login(t, db, "exe", "dot_executor")
	for _, stmt := range []string{
		`SELECT fn_job_enqueue('mail', 'iu', '{}', now() + interval '364 days', 'invoice-42')`,
		`SELECT fn_job_enqueue_many('mail', 'iu', '[{}, {}]', now() + interval '364 days', ARRAY[NULL, 'invoice-42'])`,
	} {
		e := pgtest.RequireSQLState(t, callErr(t, exe, stmt), "22023")
		if want := "a job with a dedupe key may be due at most 86400 seconds ahead"; !strings.Contains(e.Message, want) {
			t.Fatalf("%s: %s, want %q", stmt, e.Message, want)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM job_queue`); n != 0 {
		t.Fatalf("refused enqueues wrote %d jobs", n)
	}
	var squat, legit string
	db.QueryRow(t, `SELECT fn_job_enqueue('mail', 'iu', '{}', now() + interval '23 hours', 'invoice-42')::text`, nil, &squat)
	db.QueryRow(t, `SELECT fn_job_enqueue('mail', 'iu', '{}', now(), 'invoice-42')::text`, nil, &legit)
	if squat != legit {
		t.Fatalf("inside the horizon a key still deduplicates: %s vs %s", squat, legit)
	}
	if _, err := exe.Exec(ctx(t), `SELECT fn_job_enqueue('mail', 'iu', '{}', now() + interval '364 days')`); err != nil {
		t.Fatalf("a job without a key may wait up to a year: %v", err)
	}
}

// Rule: an enqueue is never answered with someone else's job. A dedupe key is one key
// across every kind and domain while its job is live; before, fn_job_enqueue and
// fn_job_enqueue_many answered a key held by a live job of another kind or domain with
// that job's id, as if it were the caller's: an invoice enqueued with key order:42 while
// an email job (another executor's, or one squatted on purpose) held it created nothing,
// raised nothing, and was lost. Now that is refused (23505, with the fix in the HINT, and
// the whole batch with it); the same kind and domain still deduplicate.
func TestJobTrust_ADedupeKeyOfAnotherKindIsRefused(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	squatter, _ := login(t, db, "sq", "dot_executor")
	producer, _ := login(t, db, "prod", "dot_executor")
	var squat string
	if err := squatter.QueryRow(ctx(t), `SELECT fn_job_enqueue('email', 'iu', '{"x": 1}', now(), 'order:42')::text`).Scan(&squat); err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`SELECT fn_job_enqueue('invoice', 'iu', '{"amount": 10}', now(), 'order:42')`,
		`SELECT fn_job_enqueue('email', 'billing', '{"x": 1}', now(), 'order:42')`,
		`SELECT fn_job_enqueue_many('invoice', 'iu', '[{"a": 1}, {"a": 2}]', now(), ARRAY['order:41', 'order:42'])`,
	} {
		e := pgtest.RequireSQLState(t, callErr(t, producer, stmt), "23505")
		if !strings.Contains(e.Message, "dedupe key 'order:42' is held by a live job of kind 'email' in domain 'iu'") || e.Hint == "" {
			t.Fatalf("%s: %s (hint %q)", stmt, e.Message, e.Hint)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM job_queue`); n != 1 {
		t.Fatalf("refused enqueues must write nothing (the batch's order:41 included): %d jobs, want the squatter's 1", n)
	}
	var again string
	if err := producer.QueryRow(ctx(t), `SELECT fn_job_enqueue('email', 'iu', '{"x": 2}', now(), 'order:42')::text`).Scan(&again); err != nil || again != squat {
		t.Fatalf("the same kind and domain still deduplicate: %s vs %s (%v)", again, squat, err)
	}
	var many []string
	if err := producer.QueryRow(ctx(t), `SELECT fn_job_enqueue_many('email', 'iu', '[{"a": 1}]', now(), ARRAY['order:42'])::text[]`).Scan(&many); err != nil || len(many) != 1 || many[0] != squat {
		t.Fatalf("the batch form too: %v vs %s (%v)", many, squat, err)
	}
}
