package jobqueue

import (
	"strings"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Batch enqueue: one job per payload, ids in input order; a dedupe key with a live job, or
// repeated inside the batch, yields the existing job; a bad element (not an object, a
// denylisted key, a blank or oversized key) is refused with 22023 and writes nothing.
func TestJobEnqueueMany_OrderDedupeAndAllOrNothing(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	live := enqueue(t, db.Pool, "k", "dk-live", 5)
	var ids []string
	if err := db.Pool.QueryRow(ctx(t), `SELECT fn_job_enqueue_many('k', 'iu', '[{"n": 0}, {"n": 1}, {"n": 2}, {"n": 3}]',
	        now(), ARRAY['dk-a', NULL, 'dk-live', 'dk-a'])::text[]`).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 4 || ids[2] != live || ids[3] != ids[0] || ids[0] == ids[1] || ids[1] == live {
		t.Fatalf("ids %v (live %s)", ids, live)
	}
	for i, n := range []int{0, 1} {
		var got int
		db.QueryRow(t, `SELECT (payload->>'n')::int FROM job_queue WHERE job_id = $1`, []any{ids[i]}, &got)
		if got != n {
			t.Fatalf("element %d got payload n=%d", i, got)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM job_queue`); n != 3 {
		t.Fatalf("jobs: %d, want 3 (live + 2 new)", n)
	}
	for _, c := range []struct{ sql, msg string }{
		{`SELECT fn_job_enqueue_many('k', 'iu', '[{}, {"a": {"token": 1}}]')`, "fn_job_enqueue_many: p_payloads[1] carries denylisted keys at $.a.token"},
		{`SELECT fn_job_enqueue_many('k', 'iu', '[{}, 3]')`, "fn_job_enqueue_many: p_payloads[1] must be a JSON object"},
		{`SELECT fn_job_enqueue_many('k', 'iu', '{}')`, "fn_job_enqueue_many: p_payloads must be a JSON array"},
		{`SELECT fn_job_enqueue_many('k', 'iu', '[{}, {}]', now(), ARRAY['x', ' '])`, "fn_job_enqueue_many: p_dedupe_keys[2] required"},
		{`SELECT fn_job_enqueue_many('k', 'iu', '[{}]', now(), ARRAY[repeat('x', 201)])`, "fn_job_enqueue_many: p_dedupe_keys[1] is 201 bytes long"},
		{`SELECT fn_job_enqueue_many('k', 'iu', '[{}]', now(), ARRAY['x', 'y'])`, "fn_job_enqueue_many: p_dedupe_keys has 2 elements"},
		{`SELECT fn_job_enqueue_many(repeat('k', 201), 'iu', '[{}]')`, "fn_job_enqueue_many: p_job_kind is 201 bytes long"},
		{`SELECT fn_job_enqueue_many('k', 'iu', (SELECT jsonb_agg('{}'::jsonb) FROM generate_series(1, 10001)))`, "fn_job_enqueue_many: the number of payloads must be between 0 and 10000"},
	} {
		e := pgtest.RequireSQLState(t, callErr(t, db.Pool, c.sql), "22023")
		if !strings.HasPrefix(e.Message, c.msg) {
			t.Errorf("%s: message %q, want prefix %q", c.sql, e.Message, c.msg)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM job_queue`); n != 3 {
		t.Fatalf("a refused batch wrote rows: %d jobs", n)
	}
}

// Abuse limits: process_after must be finite and at most one year ahead (a never-due job
// would squat its dedupe key forever); names are bounded. Refusals are 22023 and write
// nothing; a time just inside the horizon is accepted.
func TestJobLimits_ProcessAfterHorizonAndNames(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	for _, c := range []struct{ sql, msg string }{
		{`SELECT fn_job_enqueue('k', 'iu', '{}', 'infinity', 'dk')`, "fn_job_enqueue: p_process_after must be a finite time"},
		{`SELECT fn_job_enqueue('k', 'iu', '{}', '-infinity')`, "fn_job_enqueue: p_process_after must be a finite time"},
		{`SELECT fn_job_enqueue('k', 'iu', '{}', now() + interval '1 year 1 minute', 'dk')`, "fn_job_enqueue: p_process_after"},
		{`SELECT fn_job_enqueue_many('k', 'iu', '[{}]', 'infinity')`, "fn_job_enqueue_many: p_process_after must be a finite time"},
		{`SELECT fn_job_enqueue_many('k', 'iu', '[{}]', now() + interval '2 years')`, "fn_job_enqueue_many: p_process_after"},
		{`SELECT fn_job_enqueue('k', 'iu', '{}', now(), repeat('d', 201))`, "fn_job_enqueue: p_dedupe_key is 201 bytes long"},
		{`SELECT fn_job_enqueue('k', 'iu', '{}', now(), E' \t')`, "fn_job_enqueue: p_dedupe_key required"},
		{`SELECT fn_job_enqueue(repeat('k', 201), 'iu')`, "fn_job_enqueue: p_job_kind is 201 bytes long"},
		{`SELECT fn_job_claim(repeat('w', 201), '{k}')`, "fn_job_claim: p_worker is 201 bytes long"},
		{`SELECT fn_job_claim('w', ARRAY[' '])`, "fn_job_claim: p_job_kinds required"},
		{`SELECT fn_job_extend_lease(gen_random_uuid(), repeat('w', 201), gen_random_uuid())`, "fn_job_extend_lease: p_worker is 201 bytes long"},
	} {
		e := pgtest.RequireSQLState(t, callErr(t, db.Pool, c.sql), "22023")
		if !strings.HasPrefix(e.Message, c.msg) {
			t.Errorf("%s: message %q, want prefix %q", c.sql, e.Message, c.msg)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM job_queue`); n != 0 {
		t.Fatalf("refused enqueues wrote %d rows", n)
	}
	db.Exec(t, `SELECT fn_job_enqueue('k', 'iu', '{}', now() + interval '364 days')`)
	db.Exec(t, `SELECT fn_job_enqueue('k', 'iu', '{}', now() + interval '23 hours', 'dk')`)
}

// Claim order across kinds: asking for several kinds returns the oldest due jobs among all
// of them (each kind read in index order, then merged), never a not-yet-due job.
func TestJobClaim_SeveralKindsOldestFirst(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	db.Exec(t, `INSERT INTO job_queue (job_kind, event_domain, process_after)
	            SELECT CASE WHEN g % 3 = 0 THEN 'a' WHEN g % 3 = 1 THEN 'b' ELSE 'c' END, 'iu',
	                   now() - make_interval(secs => 1000 - g)
	              FROM generate_series(1, 30) g`)
	db.Exec(t, `SELECT fn_job_enqueue('a', 'iu', '{}', now() + interval '1 hour')`)
	got := claimTokens(t, db.Pool, "w", []string{"a", "b", "a"}, 8, 60)
	var want []string
	if err := db.Pool.QueryRow(ctx(t), `SELECT array_agg(job_id::text ORDER BY process_after, job_id) FROM (
	        SELECT job_id, process_after FROM job_queue WHERE job_kind IN ('a', 'b') AND process_after <= now()
	         ORDER BY process_after, job_id LIMIT 8) x`).Scan(&want); err != nil {
		t.Fatal(err)
	}
	if len(got) != 8 {
		t.Fatalf("claimed %d", len(got))
	}
	for i := range got {
		if got[i].ID != want[i] {
			t.Fatalf("claim %d = %s (%s), want %s", i, got[i].ID, got[i].Kind, want[i])
		}
	}
	if more := claimTokens(t, db.Pool, "w", []string{"a", "b"}, 100, 60); len(more) != 12 {
		t.Fatalf("second claim: %d, want the 12 remaining due a/b jobs", len(more))
	}
}

// Pause per kind: once fn_job_kind_pause returns, no claimer — several sessions asking
// for the kind alone or with others — gets a job of that kind; other kinds flow on;
// v_queue_health shows the kind paused (not as a problem); resume makes it claimable again.
func TestJobKindPause_NeverClaimedUntilResumed(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	db.Exec(t, `SELECT fn_job_enqueue_many('p', 'iu', (SELECT jsonb_agg('{}'::jsonb) FROM generate_series(1, 50)))`)
	db.Exec(t, `SELECT fn_job_enqueue_many('o', 'iu', (SELECT jsonb_agg('{}'::jsonb) FROM generate_series(1, 50)))`)
	admin := asRole(t, db, "workflow_admin")
	out := callJSON(t, admin, `SELECT fn_job_kind_pause('p', 'downstream outage', 'ops')`)
	if out["paused"] != true || out["already"] != false || out["paused_by"] != "ops" {
		t.Fatalf("pause: %v", out)
	}
	if again := callJSON(t, admin, `SELECT fn_job_kind_pause('p', 'again', 'ops2')`); again["already"] != true || again["reason"] != "downstream outage" {
		t.Fatalf("second pause: %v", again)
	}
	exec := asRole(t, db, "dot_executor")
	pgtest.RequireSQLState(t, callErr(t, exec, `SELECT fn_job_kind_resume('p')`), "42501")
	done := make(chan []leased, 4)
	for range 4 {
		conn := db.Conn(t)
		go func() {
			var all []leased
			for range 5 {
				all = append(all, claimTokens(t, conn, "w", []string{"p", "o"}, 5, 60)...)
				all = append(all, claimTokens(t, conn, "w", []string{"p"}, 5, 60)...)
			}
			done <- all
		}()
	}
	total := 0
	for range 4 {
		for _, j := range <-done {
			if j.Kind == "p" {
				t.Fatalf("paused kind claimed: %v", j)
			}
			total++
		}
	}
	if total != 50 {
		t.Fatalf("claimed %d of kind o, want all 50", total)
	}
	var hint string
	var paused bool
	var backlog int
	db.QueryRow(t, `SELECT status_hint, paused, backlog FROM v_queue_health WHERE source = 'job_kind_paused' AND subject = 'p'`, nil, &hint, &paused, &backlog)
	if hint != "paused" || !paused || backlog != 50 {
		t.Fatalf("v_queue_health paused row: %s %v %d", hint, paused, backlog)
	}
	if r := callJSON(t, admin, `SELECT fn_job_kind_resume('p', 'ops')`); r["resumed"] != true {
		t.Fatalf("resume: %v", r)
	}
	if r := callJSON(t, admin, `SELECT fn_job_kind_resume('p', 'ops')`); r["resumed"] != false || r["reason"] != "not_paused" {
		t.Fatalf("second resume: %v", r)
	}
	if got := claimTokens(t, db.Pool, "w", []string{"p"}, 100, 60); len(got) != 50 {
		t.Fatalf("after resume claimed %d", len(got))
	}
	if n := count(t, db, `SELECT count(*) FROM v_queue_health WHERE source = 'job_kind_paused'`); n != 0 {
		t.Fatalf("paused rows after resume: %d", n)
	}
}

// Pruning: only finished jobs past the retention go — succeeded ones, and dead ones already
// copied to job_dead_letter; queued and running jobs (however old), recent finished jobs,
// a dead job with no dead-letter copy and every dead letter stay. The limit bounds a call,
// retention 0 keeps everything, and a malformed retention deletes nothing and says so.
func TestJobPrune_OnlyOldFinishedJobs(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	old := `now() - interval '2 days'`
	db.Exec(t, `INSERT INTO job_queue (job_kind, event_domain, status, enqueued_at, finished_at)
	            SELECT 'k', 'iu', 'succeeded', `+old+`, `+old+` FROM generate_series(1, 30)`)
	recent := enqueue(t, db.Pool, "k")
	claimTokens(t, db.Pool, "w", []string{"k"}, 1, 60)
	callJSON(t, db.Pool, `SELECT fn_job_complete($1, 'w')`, recent)
	queued := enqueue(t, db.Pool, "k")
	running := enqueue(t, db.Pool, "r")
	claimTokens(t, db.Pool, "w", []string{"r"}, 1, 60)
	db.Exec(t, `UPDATE job_queue SET enqueued_at = `+old+`, process_after = now() + interval '1 day' WHERE job_id IN ($1, $2)`, queued, running)
	dead := enqueue(t, db.Pool, "d", "dk-d", 1)
	c := claimTokens(t, db.Pool, "w", []string{"d"}, 1, 60)
	callJSON(t, db.Pool, `SELECT fn_job_fail($1, 'w', 'boom', $2::uuid)`, dead, c[0].Token)
	db.Exec(t, `INSERT INTO job_queue (job_kind, event_domain, status, finished_at) VALUES ('orphan', 'iu', 'dead', `+old+`)`)
	db.Exec(t, `UPDATE job_queue SET finished_at = `+old+` WHERE job_id = $1`, dead)

	setConfig(t, db, "queue.job.retention_seconds", "0")
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_job_prune()`), `{"pruned": 0, "retention_seconds": 0, "more": false}`)
	setConfig(t, db, "queue.job.retention_seconds", "1 day")
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_job_prune()`), `{"pruned": 0, "retention_seconds": null, "invalid_retention": "1 day"}`)
	setConfig(t, db, "queue.job.retention_seconds", " 86400 ")

	admin := asRole(t, db, "workflow_admin")
	requireJSONEqual(t, callJSON(t, admin, `SELECT fn_job_prune(20)`), `{"pruned": 20, "retention_seconds": 86400, "more": true}`)
	requireJSONEqual(t, callJSON(t, admin, `SELECT fn_job_prune(20)`), `{"pruned": 11, "retention_seconds": 86400, "more": false}`)
	var left []string
	db.QueryRow(t, `SELECT array_agg(job_kind || ':' || status ORDER BY job_kind, status) FROM job_queue`, nil, &left)
	if strings.Join(left, ",") != "k:queued,k:succeeded,orphan:dead,r:running" {
		t.Fatalf("left after prune: %v", left)
	}
	if n := count(t, db, `SELECT count(*) FROM job_dead_letter WHERE job_id = $1 AND resolved_at IS NULL`, dead); n != 1 {
		t.Fatalf("the open dead letter went: %d", n)
	}
	db.Exec(t, `DELETE FROM dot_config WHERE key = 'queue.job.retention_seconds'`)
	if out := callJSON(t, db.Pool, `SELECT fn_job_prune()`); num(t, out, "retention_seconds") != 86400 {
		t.Fatalf("default retention: %v", out)
	}
	exec := asRole(t, db, "dot_executor")
	pgtest.RequireSQLState(t, callErr(t, exec, `SELECT fn_job_prune()`), "42501")
}

// Bulk replay of job dead letters: each call replays at most p_limit open ones matching the
// filter, oldest failure first, and says whether more remain; calling again resumes where
// the last stopped until none remain; other kinds stay open. Two concurrent callers never
// replay the same dead letter (the second skips rows the first holds, without waiting). An
// unknown filter key or a malformed value is refused (22023) and replays nothing.
func TestJobDeadLetterReplayMany_BoundedResumable(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	mk := func(kind, errText string, n int) {
		db.Exec(t, `INSERT INTO job_dead_letter (job_id, job_kind, event_domain, job_snapshot, attempts, last_error, last_failed_at)
		            SELECT gen_random_uuid(), $1, 'iu', jsonb_build_object('payload', jsonb_build_object('n', g), 'max_attempts', 3),
		                   3, $2, now() - make_interval(secs => 1000 - g)
		              FROM generate_series(1, $3) g`, kind, errText, n)
	}
	mk("a", "upstream 503: busy", 25)
	mk("a", "bad input", 3)
	mk("b", "upstream 503: busy", 5)
	admin := asRole(t, db, "workflow_admin")
	for _, bad := range []string{`{"job_knd": "a"}`, `{"route_key": "a"}`, `{"job_kind": 1}`, `{"failed_after": "yesterday-ish"}`, `[]`} {
		pgtest.RequireSQLState(t, callErr(t, admin, `SELECT fn_job_dead_letter_replay_many($1::jsonb, 10)`, bad), "22023")
	}
	pgtest.RequireSQLState(t, callErr(t, admin, `SELECT fn_job_dead_letter_replay_many('{}', 0)`), "22023")
	if n := count(t, db, `SELECT count(*) FROM job_queue`); n != 0 {
		t.Fatalf("refused calls replayed %d", n)
	}
	filter := `{"job_kind": "a", "error_code": "upstream 503"}`
	for i, want := range []string{
		`{"selected": 10, "replayed": 10, "more": true, "held": 0}`,
		`{"selected": 10, "replayed": 10, "more": true, "held": 0}`,
		`{"selected": 5, "replayed": 5, "more": false, "held": 0}`,
		`{"selected": 0, "replayed": 0, "more": false, "held": 0}`,
	} {
		t.Logf("call %d", i+1)
		requireJSONEqual(t, callJSON(t, admin, `SELECT fn_job_dead_letter_replay_many($1::jsonb, 10)`, filter), want)
	}
	if n := count(t, db, `SELECT count(*) FROM job_queue WHERE job_kind = 'a' AND status = 'queued'`); n != 25 {
		t.Fatalf("replayed jobs: %d", n)
	}
	if n := count(t, db, `SELECT count(*) FROM job_dead_letter WHERE resolved_at IS NULL`); n != 8 {
		t.Fatalf("open after: %d, want 3 'bad input' + 5 of kind b", n)
	}

	// Concurrent callers: A holds its batch uncommitted; B takes the rest without waiting.
	a, b := db.Conn(t), db.Conn(t)
	txA, err := a.Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer txA.Rollback(ctx(t))
	outA := callJSON(t, txA, `SELECT fn_job_dead_letter_replay_many('{}', 5)`)
	if _, err := b.Exec(ctx(t), `SET lock_timeout = '2s'`); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	outB := callJSON(t, b, `SELECT fn_job_dead_letter_replay_many('{}', 100)`)
	if time.Since(began) > time.Second {
		t.Fatalf("second caller waited %v", time.Since(began))
	}
	if err := txA.Commit(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if num(t, outA, "replayed")+num(t, outB, "replayed") != 8 || num(t, outA, "replayed") != 5 {
		t.Fatalf("concurrent: %v + %v", outA, outB)
	}
	if n := count(t, db, `SELECT count(*) FROM job_queue`); n != 33 {
		t.Fatalf("jobs after all replays: %d, want 33 (each dead letter once)", n)
	}
}

// Rule: a dead job whose dedupe key a live job of another kind or domain holds is not
// replayed (its enqueue would be refused: a key is one key across every kind and domain
// while its job is live), and it stops nothing else. The single replay answers
// dedupe_key_held and leaves the dead letter open; the bulk replay passes it by, counts it
// in held and leaves it out of more, so a caller that repeats until more is false stops;
// once the key is free, it replays. (Before keys were refused across kinds, the replay was
// answered with the other kind's job and the dead letter resolved as replayed.)
func TestJobDeadLetterReplay_AKeyHeldByAnotherKindIsPassedBy(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	db.Exec(t, `INSERT INTO job_dead_letter (job_id, job_kind, event_domain, job_snapshot, attempts, last_error, last_failed_at)
	            SELECT gen_random_uuid(), 'k', 'iu', jsonb_build_object('payload', '{}'::jsonb, 'max_attempts', 3, 'dedupe_key', key),
	                   3, 'boom', now() - make_interval(secs => ord)
	              FROM unnest(ARRAY['K1', 'K2']) WITH ORDINALITY AS u(key, ord)`)
	email := enqueue(t, db.Pool, "email", "K1", 5) // a live job of another kind holds K1
	admin := asRole(t, db, "workflow_admin")
	var held string
	db.QueryRow(t, `SELECT id::text FROM job_dead_letter WHERE job_snapshot->>'dedupe_key' = 'K1'`, nil, &held)
	out := callJSON(t, admin, `SELECT fn_job_dead_letter_replay($1::uuid)`, held)
	if out["replayed"] != false || out["reason"] != "dedupe_key_held" || out["held_by_job_id"] != email || out["held_by_job_kind"] != "email" {
		t.Fatalf("the single replay of a dead job whose key another kind holds: %v", out)
	}
	requireJSONEqual(t, callJSON(t, admin, `SELECT fn_job_dead_letter_replay_many('{}', 10)`), `{"selected": 1, "replayed": 1, "more": false, "held": 1}`)
	if n := count(t, db, `SELECT count(*) FROM job_dead_letter WHERE resolved_at IS NULL`); n != 1 {
		t.Fatalf("open dead letters: %d, want the held one", n)
	}
	if n := count(t, db, `SELECT count(*) FROM job_queue WHERE job_kind = 'k'`); n != 1 {
		t.Fatalf("replayed k jobs: %d, want K2's", n)
	}
	// The email job finishes: the key is free, and the held one replays.
	c := claimTokens(t, db.Pool, "w", []string{"email"}, 1, 60)
	requireJSONEqual(t, callJSON(t, db.Pool, `SELECT fn_job_complete($1::uuid, 'w', $2::uuid) - 'job_id' - 'attempt' - 'worker' - 'status'`, c[0].ID, c[0].Token), `{"completed": true}`)
	requireJSONEqual(t, callJSON(t, admin, `SELECT fn_job_dead_letter_replay_many('{}', 10)`), `{"selected": 1, "replayed": 1, "more": false, "held": 0}`)
}

// Bulk replay of route dead letters goes through the single-row replay (attempt written,
// resolved when the route is now dry-run), bounded by p_limit and resumable; rows of
// other routes and rows outside the time window stay open; unknown keys are refused.
func TestRouteDeadLetterReplayMany_BoundedResumable(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	db.Exec(t, `INSERT INTO iu_outbound_route (event_domain, event_type, event_stream, route_key, enabled, dry_run)
	            VALUES ('iu', 'fixed', 's', 'r_fixed', true, true), ('iu', 'other', 's', 'r_other', true, true)`)
	mk := func(typ, route string, n int, age string) {
		db.Exec(t, `INSERT INTO iu_route_dead_letter (worker_name, event_id, event_domain, event_type, event_stream, route_key,
		                idempotency_key, event_snapshot, error_code, last_failed_at)
		            SELECT 'w', gen_random_uuid(), 'iu', $1::text, 's', $2::text, $2::text || ':' || gen_random_uuid(),
		                   jsonb_build_object('event_domain', 'iu', 'event_type', $1::text, 'event_stream', 's'), '0A000',
		                   now() - $4::interval - make_interval(secs => g)
		              FROM generate_series(1, $3) g`, typ, route, n, age)
	}
	mk("fixed", "r_fixed", 12, "1 hour")
	mk("fixed", "r_fixed", 2, "3 days")
	mk("other", "r_other", 4, "1 hour")
	admin := asRole(t, db, "workflow_admin")
	pgtest.RequireSQLState(t, callErr(t, admin, `SELECT fn_iu_route_dead_letter_replay_many('{"job_kind": "x"}', 10)`), "22023")
	filter := `{"route_key": "r_fixed", "error_code": "0A000", "failed_after": "` + time.Now().Add(-48*time.Hour).UTC().Format(time.RFC3339) + `"}`
	first := callJSON(t, admin, `SELECT fn_iu_route_dead_letter_replay_many($1::jsonb, 5)`, filter)
	if num(t, first, "selected") != 5 || num(t, first, "resolved") != 5 || first["more"] != true {
		t.Fatalf("first: %v", first)
	}
	second := callJSON(t, admin, `SELECT fn_iu_route_dead_letter_replay_many($1::jsonb, 100)`, filter)
	if num(t, second, "selected") != 7 || num(t, second, "resolved") != 7 || second["more"] != false {
		t.Fatalf("second: %v", second)
	}
	if s := second["statuses"].(map[string]any); s["dry_run"] != float64(7) {
		t.Fatalf("statuses: %v", s)
	}
	if n := count(t, db, `SELECT count(*) FROM iu_route_attempt WHERE status = 'dry_run' AND detail ? 'replay_of'`); n != 12 {
		t.Fatalf("replay attempts: %d", n)
	}
	if n := count(t, db, `SELECT count(*) FROM iu_route_dead_letter WHERE resolved_at IS NULL`); n != 6 {
		t.Fatalf("open after: %d, want 2 old + 4 other", n)
	}
}
