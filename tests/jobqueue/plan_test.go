package jobqueue

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// claimPlans runs one claim with auto_explain on (nested statements, analyze) and returns
// the plans PostgreSQL reported for it.
func claimPlans(t *testing.T, db *pgtest.DB, kinds []string, limit int) string {
	t.Helper()
	conn, plans := pgtest.ExplainedConn(t, db)
	if got := claimTokens(t, conn, "w", kinds, limit, 60); len(got) != limit {
		t.Fatalf("claimed %d, want %d", len(got), limit)
	}
	return plans()
}

var indexScanRows = regexp.MustCompile(`Index Scan using job_queue_due_idx on job_queue j\w*[^\n]*actual time=[^\n]* rows=(\d+) loops=(\d+)`)

// Claim cost follows the claim, not the backlog: with 20,000 due jobs of the kind (and
// 20,000 finished ones) a claim of 50 reads the due index in its order (no Sort) and stops
// after 50 entries; asking for two kinds reads at most 50 entries per kind. (A filter
// job_kind = ANY(kinds) cannot use the index order and sorted the whole backlog.)
func TestJobClaim_ReadsTheDueIndexInOrder(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	db.Exec(t, `INSERT INTO job_queue (job_kind, event_domain, process_after)
	            SELECT CASE WHEN g % 2 = 0 THEN 'a' ELSE 'b' END, 'iu', now() - make_interval(secs => g) FROM generate_series(1, 40000) g`)
	db.Exec(t, `INSERT INTO job_queue (job_kind, event_domain, status, finished_at)
	            SELECT 'a', 'iu', 'succeeded', now() FROM generate_series(1, 20000)`)
	db.Exec(t, `VACUUM ANALYZE job_queue`)

	one := claimPlans(t, db, []string{"a"}, 50)
	m := indexScanRows.FindAllStringSubmatch(one, -1)
	if len(m) != 1 || strings.Contains(duePlan(one), "Sort") {
		t.Fatalf("one kind: want one ordered scan of job_queue_due_idx and no sort; plans:\n%s", one)
	}
	if rows, _ := strconv.Atoi(m[0][1]); rows != 50 {
		t.Fatalf("one kind: the index scan returned %d rows for a claim of 50; plans:\n%s", rows, one)
	}

	two := claimPlans(t, db, []string{"a", "b"}, 50)
	m = indexScanRows.FindAllStringSubmatch(two, -1)
	if len(m) != 1 {
		t.Fatalf("two kinds: want one per-kind scan of job_queue_due_idx; plans:\n%s", two)
	}
	rows, _ := strconv.Atoi(m[0][1])
	loops, _ := strconv.Atoi(m[0][2])
	if loops != 2 || rows > 50 {
		t.Fatalf("two kinds: %d rows x %d loops, want <= 50 rows per kind; plans:\n%s", rows, loops, two)
	}
}

// duePlan is the part of the claim's plan that picks the jobs (the "due" CTE).
func duePlan(plans string) string {
	i := strings.Index(plans, "CTE due")
	if i < 0 {
		return ""
	}
	rest := plans[i:]
	if j := strings.Index(rest, "CTE Scan on due"); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

var (
	pkeyLookups = regexp.MustCompile(`Index Scan using job_queue_pkey on job_queue j\w*[^\n]*actual time=[^\n]* rows=1 loops=(\d+)`)
	// Any other way of reaching job_queue's rows than the due index and the key: a
	// whole-table scan (and the hash or merge join over it), or a sort of what it read.
	wholeTable = regexp.MustCompile(`Seq Scan on job_queue|Bitmap Heap Scan on job_queue|Hash Join|Merge Join|Sort Key`)
)

// requireClaimPlan fails unless the claim's plan read job_queue_due_idx in order (no sort)
// and stopped after limit entries, then found each claimed job by its key, one lookup each,
// and never read job_queue any other way.
func requireClaimPlan(t *testing.T, plans string, limit int) {
	t.Helper()
	m := indexScanRows.FindAllStringSubmatch(plans, -1)
	if len(m) != 1 {
		t.Fatalf("want one ordered scan of job_queue_due_idx; plans:\n%s", plans)
	}
	if rows, _ := strconv.Atoi(m[0][1]); rows != limit {
		t.Fatalf("the due index scan returned %d rows for a claim of %d; plans:\n%s", rows, limit, plans)
	}
	k := pkeyLookups.FindAllStringSubmatch(plans, -1)
	if len(k) != 1 {
		t.Fatalf("want the claimed jobs found by job_queue_pkey; plans:\n%s", plans)
	}
	if loops, _ := strconv.Atoi(k[0][1]); loops != limit {
		t.Fatalf("%d key lookups for a claim of %d; plans:\n%s", loops, limit, plans)
	}
	if w := wholeTable.FindString(plans); w != "" {
		t.Fatalf("the claim reads job_queue another way (%s); plans:\n%s", w, plans)
	}
}

// Rule: a claim plans its statement once per session and keeps it (planning it per call
// cost about half of a one-job claim), and the kept plan is the per-call plan's shape: the
// due index read in order, stopping after the claim's limit, then one key lookup per
// claimed job, whatever the backlog. The backlog here is 20,000 due jobs of one kind: a
// kept plan that joined the picked ids to job_queue (rather than looking each up by key)
// estimated a tenth of them and scanned all of job_queue, on every claim. That the plan is
// kept shows as planner settings changed between two claims of one session not reaching
// the second claim: a statement planned again would scan the table.
func TestJobClaim_KeepsOnePlanThatReadsTheDueIndexInOrder(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	// An ANALYZE between the two claims would drop the kept plan (rightly): none may run.
	db.Exec(t, `ALTER TABLE job_queue SET (autovacuum_enabled = off)`)
	db.Exec(t, `INSERT INTO job_queue (job_kind, event_domain, process_after)
	            SELECT 'a', 'iu', now() - make_interval(secs => g) FROM generate_series(1, 20000) g`)
	db.Exec(t, `VACUUM ANALYZE job_queue`)

	conn, plans := pgtest.ExplainedConn(t, db)
	if got := claimTokens(t, conn, "w", []string{"a"}, 50, 60); len(got) != 50 {
		t.Fatalf("claimed %d, want 50", len(got))
	}
	requireClaimPlan(t, plans(), 50)

	for _, s := range []string{`SET enable_indexscan = off`, `SET enable_bitmapscan = off`} {
		if _, err := conn.Exec(ctx(t), s); err != nil {
			t.Fatal(err)
		}
	}
	if got := claimTokens(t, conn, "w", []string{"a"}, 50, 60); len(got) != 50 {
		t.Fatalf("second claim: %d, want 50", len(got))
	}
	requireClaimPlan(t, plans(), 50)
}

// Rule: a claim never keeps a plan made while job_queue was small. A plan is made for the
// table's size at the time; below ~55 pages a whole-table scan costs less than the key
// lookups, and a plan made then and kept went on scanning the whole table after a burst of
// enqueues, until the table was next analyzed (before: "auto" kept it too, from the sixth
// claim on). So while job_queue is under 1 MiB a claim is planned per call, and a session
// that started on an almost empty queue reads the due index in order once it is full. The
// setting that does it ends with the claim: the caller's plan_cache_mode is untouched.
func TestJobClaim_SmallQueueIsPlannedPerCall(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	// No ANALYZE may come between the burst and the claim (it would drop any kept plan).
	db.Exec(t, `ALTER TABLE job_queue SET (autovacuum_enabled = off)`)
	db.Exec(t, `INSERT INTO job_queue (job_kind, event_domain, process_after)
	            SELECT 'a', 'iu', now() - interval '1 day' - make_interval(secs => g) FROM generate_series(1, 50) g`)
	db.Exec(t, `ANALYZE job_queue`)

	conn, plans := pgtest.ExplainedConn(t, db)
	for i := range 7 {
		if got := claimTokens(t, conn, "w", []string{"a"}, 1, 60); len(got) != 1 {
			t.Fatalf("claim %d on the small queue: %d jobs, want 1", i, len(got))
		}
	}
	var mode string
	if err := conn.QueryRow(ctx(t), `SHOW plan_cache_mode`).Scan(&mode); err != nil || mode != "auto" {
		t.Fatalf("the session's plan_cache_mode after a claim: %q (%v), want auto", mode, err)
	}
	plans()

	db.Exec(t, `INSERT INTO job_queue (job_kind, event_domain, process_after)
	            SELECT 'a', 'iu', now() - make_interval(secs => g) FROM generate_series(1, 20000) g`)
	if got := claimTokens(t, conn, "w", []string{"a"}, 50, 60); len(got) != 50 {
		t.Fatalf("claim after the burst: %d, want 50", len(got))
	}
	requireClaimPlan(t, plans(), 50)
}

var leaseIndexScan = regexp.MustCompile(`(Index Scan|Bitmap Index Scan) using job_queue_lease_idx`)

// Rule (023): the reaper finds the expired jobs through job_queue_lease_idx, running jobs by
// lease expiry, however many queued and finished jobs the table holds. The lease rules are
// enforced by an index predicate of their own (job_queue_lease_rules), not by this index's:
// the planner uses a partial index only for a query whose WHERE proves its predicate, and
// with the rules' cast in it the reaper (asking status = 'running') read the whole table.
func TestJobReap_ReadsTheLeaseIndex(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	db.Exec(t, `INSERT INTO job_queue (job_kind, event_domain) SELECT 'a', 'iu' FROM generate_series(1, 20000)`)
	db.Exec(t, `INSERT INTO job_queue (job_kind, event_domain, status, finished_at)
	            SELECT 'a', 'iu', 'succeeded', now() FROM generate_series(1, 20000)`)
	db.Exec(t, `INSERT INTO job_queue (job_kind, event_domain, status, lease_owner, lease_expires_at, lease_token, leased_at)
	            SELECT 'a', 'iu', 'running', 'w', now() + CASE WHEN g <= 30 THEN interval '-1 minute' ELSE interval '1 hour' END,
	                   gen_random_uuid(), now() FROM generate_series(1, 1000) g`)
	db.Exec(t, `VACUUM ANALYZE job_queue`)

	conn, plans := pgtest.ExplainedConn(t, db)
	var reaped int
	if err := conn.QueryRow(ctx(t), `SELECT (fn_job_reap_expired_leases() ->> 'reaped')::int`).Scan(&reaped); err != nil {
		t.Fatal(err)
	}
	if reaped != 30 {
		t.Fatalf("reaped %d, want the 30 expired leases", reaped)
	}
	p := plans()
	if !leaseIndexScan.MatchString(p) || strings.Contains(p, "Seq Scan on job_queue") {
		t.Fatalf("the reaper must read job_queue_lease_idx, not the table; plans:\n%s", p)
	}
}
