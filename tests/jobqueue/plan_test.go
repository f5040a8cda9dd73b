package jobqueue

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// claimPlans runs one claim with auto_explain on (nested statements, analyze) and returns
// the plans PostgreSQL reported for it.
func claimPlans(t *testing.T, db *pgtest.DB, kinds []string, limit int) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var plans strings.Builder
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		plans.WriteString(n.Message + "\n")
		mu.Unlock()
	}
	conn, err := pgx.ConnectConfig(ctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx(t))
	for _, s := range []string{`LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`, `SET auto_explain.log_nested_statements = on`,
		`SET auto_explain.log_analyze = on`, `SET auto_explain.log_level = notice`, `SET client_min_messages = notice`} {
		if _, err := conn.Exec(ctx(t), s); err != nil {
			pgtest.Unavailable(t, "auto_explain unavailable: %v", err)
		}
	}
	if got := claimTokens(t, conn, "w", kinds, limit, 60); len(got) != limit {
		t.Fatalf("claimed %d, want %d", len(got), limit)
	}
	mu.Lock()
	defer mu.Unlock()
	return plans.String()
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
