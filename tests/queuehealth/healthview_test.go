package queuehealth

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/pgtest"
)

type healthRow struct {
	Source, Subject, Domain, StatusHint, Severity *string
	EventsSeen, DeadLettered, Backlog             *int64
	Paused                                        *bool
}

func health(t testing.TB, db *pgtest.DB) map[string]healthRow {
	t.Helper()
	out := map[string]healthRow{}
	rows, err := db.Pool.Query(ctx(t), `SELECT source, subject, domain, status_hint, severity, events_seen, dead_lettered, backlog, paused FROM v_queue_health`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var r healthRow
		if err := rows.Scan(&r.Source, &r.Subject, &r.Domain, &r.StatusHint, &r.Severity, &r.EventsSeen, &r.DeadLettered, &r.Backlog, &r.Paused); err != nil {
			t.Fatal(err)
		}
		key := *r.Source + "/" + *r.Subject
		if r.Domain != nil {
			key += "/" + *r.Domain
		}
		if _, dup := out[key]; dup {
			t.Fatalf("two rows for %s", key)
		}
		out[key] = r
	}
	return out
}

func str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func i64(p *int64) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprint(*p)
}

// Rule: v_queue_health has its nine contract columns first (source ... status_hint), in
// order, then the added ones.
func TestHealthView_ColumnOrder(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	var cols []string
	db.QueryRow(t, `SELECT array_agg(attname::text ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'v_queue_health'::regclass AND attnum > 0`, nil, &cols)
	want := "source subject domain last_seen_at age_seconds events_seen attempts_written dead_lettered status_hint"
	if got := strings.Join(cols[:9], " "); got != want {
		t.Fatalf("columns %q, want %q first", got, want)
	}
	added := strings.Join(cols[9:], " ")
	for _, c := range []string{"backlog", "oldest_pending_age_seconds", "severity", "paused"} {
		if !strings.Contains(added, c) {
			t.Errorf("added columns %q lack %s", added, c)
		}
	}
}

// Rule: one row per route worker (counters, backlog), per executor (stale / fresh /
// paused with severity), open dead letters aggregated per subject (1,000 open route dead
// letters are one row), and the queued job backlog per (kind, domain).
func TestHealthView_RowsPerSource(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	setConfig(t, db, "queue.heartbeat.stale_threshold_seconds", "0")
	// cursor: a registered route worker with three events waiting.
	db.Exec(t, `SELECT fn_iu_route_worker_register('w_health', 'iu')`)
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream) SELECT 'iu', 't', 's' FROM generate_series(1, 3)`)
	// heartbeats: fresh, stale warning, stale critical, paused.
	register(t, db, "hb_fresh", 10, 30)
	register(t, db, "hb_warn", 10, 30)
	register(t, db, "hb_crit", 10, 30)
	register(t, db, "hb_paused", 10, 30)
	silence(t, db, "hb_warn", 60)
	silence(t, db, "hb_crit", 1000)
	silence(t, db, "hb_paused", 1000)
	db.Exec(t, `SELECT fn_queue_heartbeat_pause('hb_paused', 'maintenance', 'ops')`)
	// dead letters: 1,000 open + 5 resolved route dead letters; 3 open job dead letters.
	db.Exec(t, `INSERT INTO iu_route_dead_letter (worker_name, event_id, event_domain, event_type, event_stream, idempotency_key, event_snapshot, resolved_at, resolution)
	            SELECT 'w', gen_random_uuid(), 'iu', 't', 's', 'k' || g, '{}', CASE WHEN g > 1000 THEN now() END, CASE WHEN g > 1000 THEN 'done' END
	              FROM generate_series(1, 1005) g`)
	db.Exec(t, `INSERT INTO job_dead_letter (job_id, job_kind, event_domain, job_snapshot, attempts)
	            SELECT gen_random_uuid(), 'k', 'iu', '{}', 5 FROM generate_series(1, 3)`)
	// job backlog: 4 queued of k/iu (one then claimed), 1 of j/kb.
	for range 4 {
		enqueue(t, db.Pool, "k")
	}
	db.Exec(t, `SELECT fn_job_enqueue('j', 'kb')`)
	claim(t, db.Pool, "w1", 1)

	rows := health(t, db)
	check := func(key, what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s %s = %s, want %s", key, what, got, want)
		}
	}
	c, ok := rows["cursor/w_health/iu"]
	if !ok {
		t.Fatalf("no cursor row in %v", rows)
	}
	check("cursor", "backlog", i64(c.Backlog), "3")
	check("cursor", "events_seen", i64(c.EventsSeen), "0")
	check("heartbeat/hb_fresh", "status_hint", str(rows["heartbeat/hb_fresh/iu"].StatusHint), "fresh")
	check("heartbeat/hb_fresh", "severity", str(rows["heartbeat/hb_fresh/iu"].Severity), "<nil>")
	check("heartbeat/hb_warn", "status_hint", str(rows["heartbeat/hb_warn/iu"].StatusHint), "stale")
	check("heartbeat/hb_warn", "severity", str(rows["heartbeat/hb_warn/iu"].Severity), "warning")
	check("heartbeat/hb_crit", "severity", str(rows["heartbeat/hb_crit/iu"].Severity), "critical")
	check("heartbeat/hb_paused", "status_hint", str(rows["heartbeat/hb_paused/iu"].StatusHint), "paused")
	check("heartbeat/hb_paused", "severity", str(rows["heartbeat/hb_paused/iu"].Severity), "<nil>")
	// the route worker's own PG_worker heartbeat is there too
	check("heartbeat/w_health", "status_hint", str(rows["heartbeat/w_health/iu"].StatusHint), "fresh")
	dl := rows["dead_letter_event/iu/iu"]
	check("dead_letter_event", "dead_lettered", i64(dl.DeadLettered), "1000")
	check("dead_letter_event", "status_hint", str(dl.StatusHint), "open")
	jd := rows["dead_letter_job/k/iu"]
	check("dead_letter_job", "dead_lettered", i64(jd.DeadLettered), "3")
	check("dead_letter_job", "status_hint", str(jd.StatusHint), "open")
	check("backlog_job_queue/k", "backlog", i64(rows["backlog_job_queue/k/iu"].Backlog), "3")
	check("backlog_job_queue/j", "backlog", i64(rows["backlog_job_queue/j/kb"].Backlog), "1")
	hist := rows["history/partitions"]
	check("history", "status_hint", str(hist.StatusHint), "ok")
	check("history", "backlog", i64(hist.Backlog), "0")
	if len(rows) != 11 { // 1 cursor + 5 heartbeats + 2 dead-letter aggregates + 2 backlogs + the history row
		t.Errorf("rows = %d, want 11", len(rows))
	}

	// The route worker runs (gates open): its backlog drains and its counters move.
	setConfig(t, db, "iu_core.routes_enabled", "true")
	setConfig(t, db, "iu_core.route_worker_enabled", "true")
	db.Exec(t, `SELECT fn_iu_route_worker_run('w_health', 100)`)
	c = health(t, db)["cursor/w_health/iu"]
	check("cursor after run", "backlog", i64(c.Backlog), "0")
	check("cursor after run", "events_seen", i64(c.EventsSeen), "3")
	check("cursor after run", "status_hint", str(c.StatusHint), "caught_up")

	// workflow_admin reads the view (and only the view: the tables stay closed).
	admin := asRole(t, db, "workflow_admin")
	var n int
	if err := admin.QueryRow(ctx(t), `SELECT count(*) FROM v_queue_health`).Scan(&n); err != nil || n != 11 {
		t.Fatalf("workflow_admin: %d rows, %v", n, err)
	}
	pgtest.RequireSQLState(t, callErr(t, admin, `SELECT 1 FROM job_queue`), "42501")
}

// Rule: open job dead letters are aggregated per subject — the job kind — one row
// each, whatever domains they came from. A kind with dead jobs in two domains is one row
// with the summed count; its domain column lists both (sorted, comma separated).
func TestHealthView_DeadLetterJobOneRowPerKind(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	db.Exec(t, `INSERT INTO job_dead_letter (job_id, job_kind, event_domain, job_snapshot, attempts)
	            SELECT gen_random_uuid(), 'k', CASE WHEN g <= 2 THEN 'kb' ELSE 'iu' END, '{}'::jsonb, 5 FROM generate_series(1, 5) g
	            UNION ALL
	            SELECT gen_random_uuid(), 'j', 'iu', '{}'::jsonb, 5`)
	var rows, total int
	var domain string
	db.QueryRow(t, `SELECT count(*) OVER (), dead_lettered, domain FROM v_queue_health
	                 WHERE source = 'dead_letter_job' AND subject = 'k'`, nil, &rows, &total, &domain)
	if rows != 1 || total != 5 || domain != "iu,kb" {
		t.Fatalf("dead_letter_job k: %d rows, dead_lettered %d, domain %q; want 1 row, 5, \"iu,kb\"", rows, total, domain)
	}
	if n := count(t, db, `SELECT count(*) FROM v_queue_health WHERE source = 'dead_letter_job'`); n != 2 {
		t.Fatalf("dead_letter_job rows = %d, want 2 (one per kind)", n)
	}
	db.QueryRow(t, `SELECT dead_lettered, domain FROM v_queue_health WHERE source = 'dead_letter_job' AND subject = 'j'`, nil, &total, &domain)
	if total != 1 || domain != "iu" {
		t.Fatalf("dead_letter_job j: %d, %q", total, domain)
	}
}

// Rule (issue 22, item 5): an age in v_queue_health is never negative. A reader whose
// transaction started before an event, a job and a dead letter were committed (its now()
// is older than their timestamps: a reader in an open transaction, or one whose snapshot
// is taken just after a commit that began after its now()) sees oldest_pending_age_seconds
// 0 for them, never below; so do v_iu_route_worker_status and fn_iu_route_worker_health.
func TestHealthView_OldestPendingAgeNeverNegative(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	db.Exec(t, `SELECT fn_iu_route_worker_register('w_age', 'iu')`)
	reader := db.Conn(t)
	tx, err := reader.Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx(t))
	if _, err := tx.Exec(ctx(t), `SELECT now()`); err != nil { // the reader's now() is fixed from here
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond)
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 't', 's')`)
	enqueue(t, db.Pool, "k_age")
	db.Exec(t, `INSERT INTO iu_route_dead_letter (worker_name, event_id, event_domain, event_type, event_stream, idempotency_key, event_snapshot)
	            VALUES ('w_age', gen_random_uuid(), 'iu', 't', 's', 'k-age', '{}')`)
	db.Exec(t, `INSERT INTO job_dead_letter (job_id, job_kind, event_domain, job_snapshot, attempts) VALUES (gen_random_uuid(), 'k_age', 'iu', '{}', 5)`)
	rows, err := tx.Query(ctx(t), `SELECT source, subject, oldest_pending_age_seconds FROM v_queue_health WHERE oldest_pending_age_seconds IS NOT NULL`)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int64{}
	for rows.Next() {
		var src, subj string
		var age int64
		if err := rows.Scan(&src, &subj, &age); err != nil {
			t.Fatal(err)
		}
		seen[src] = age
		if age < 0 {
			t.Errorf("v_queue_health %s/%s: oldest_pending_age_seconds %d", src, subj, age)
		}
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	for _, src := range []string{"cursor", "backlog_job_queue", "dead_letter_event", "dead_letter_job"} {
		if _, ok := seen[src]; !ok {
			t.Errorf("premise: no %s row with an age (rows %v)", src, seen)
		}
	}
	var viewAge, fnAge float64
	if err := tx.QueryRow(ctx(t), `SELECT oldest_pending_age_seconds FROM v_iu_route_worker_status WHERE worker_name = 'w_age'`).Scan(&viewAge); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx(t), `SELECT (fn_iu_route_worker_health('w_age')->'workers'->0->>'oldest_pending_age_seconds')::numeric`).Scan(&fnAge); err != nil {
		t.Fatal(err)
	}
	if viewAge < 0 || fnAge < 0 {
		t.Errorf("v_iu_route_worker_status %v, fn_iu_route_worker_health %v: want never negative", viewAge, fnAge)
	}
}
