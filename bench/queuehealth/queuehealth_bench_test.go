package queuehealth

import (
	"context"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// timer sums the time of the measured statement and of its baseline.
type timer struct {
	subject, baseline time.Duration
	n                 int
}

func (t *timer) report(b *testing.B, name string, budget time.Duration) {
	b.Helper()
	s := float64(t.subject.Microseconds()) / 1000 / float64(t.n)
	base := float64(t.baseline.Microseconds()) / 1000 / float64(t.n)
	b.ReportMetric(s, name+"-ms/op")
	b.ReportMetric(base, "baseline-ms/op")
	if base > 0 {
		b.ReportMetric(s/base, "ratio")
	}
	if budget > 0 && time.Duration(s*float64(time.Millisecond)) > budget {
		b.Errorf("%s: %.2f ms per operation, budget %v", name, s, budget)
	}
}

func timed(b *testing.B, d *time.Duration, db *pgtest.DB, sql string) {
	b.Helper()
	began := time.Now()
	rows, err := db.Pool.Query(context.Background(), sql)
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	rows.Close()
	*d += time.Since(began)
}

// The stale-check over 10,000 fresh executors (budget 100 ms), against a plain
// count(*) of queue_heartbeat.
func BenchmarkStaleCheck10kFresh(b *testing.B) {
	db := pgtest.NewDB(b)
	db.Exec(b, `INSERT INTO queue_heartbeat (executor_id, executor_kind, expected_cadence_seconds, stale_threshold_seconds)
	            SELECT 'exec_' || g, 'external_worker', 60, 180 FROM generate_series(1, 10000) g`)
	db.Exec(b, `VACUUM ANALYZE queue_heartbeat`)
	var t timer
	for b.Loop() {
		timed(b, &t.subject, db, `SELECT fn_queue_stale_check()`)
		timed(b, &t.baseline, db, `SELECT count(*) FROM queue_heartbeat`)
		t.n++
	}
	t.report(b, "stale-check", 100*time.Millisecond)
}

// SELECT * FROM v_queue_health with 100,000 open route dead letters, 10,000 executors,
// 1,000 open job dead letters, 1,000 queued jobs and a route worker (budget 100 ms),
// against plain count(*)s over the same tables.
func BenchmarkHealthView100kDeadLetters10kExecutors(b *testing.B) {
	db := pgtest.NewDB(b)
	db.Exec(b, `SELECT fn_iu_route_worker_register('w_bench', 'iu')`)
	db.Exec(b, `INSERT INTO event_outbox (event_domain, event_type, event_stream) SELECT 'iu', 't', 's' FROM generate_series(1, 1000)`)
	db.Exec(b, `INSERT INTO iu_route_dead_letter (worker_name, event_id, event_domain, event_type, event_stream, idempotency_key, event_snapshot,
	                                              last_failed_at)
	            SELECT 'w', gen_random_uuid(), 'iu_' || (g % 5), 't', 's', 'k' || g, '{}', now() - make_interval(secs => g)
	              FROM generate_series(1, 100000) g`)
	db.Exec(b, `INSERT INTO queue_heartbeat (executor_id, executor_kind, last_beat_at, expected_cadence_seconds, stale_threshold_seconds)
	            SELECT 'exec_' || g, 'external_worker', now() - make_interval(secs => g % 400), 60, 180 FROM generate_series(1, 10000) g`)
	db.Exec(b, `INSERT INTO job_dead_letter (job_id, job_kind, event_domain, job_snapshot, attempts)
	            SELECT gen_random_uuid(), 'k' || (g % 10), 'iu', '{}', 5 FROM generate_series(1, 1000) g`)
	db.Exec(b, `INSERT INTO job_queue (job_kind, event_domain) SELECT 'k' || (g % 10), 'iu' FROM generate_series(1, 1000) g`)
	db.Exec(b, `VACUUM ANALYZE`)
	var t timer
	for b.Loop() {
		timed(b, &t.subject, db, `SELECT * FROM v_queue_health`)
		timed(b, &t.baseline, db, `SELECT (SELECT count(*) FROM iu_route_dead_letter WHERE resolved_at IS NULL),
		                                  (SELECT count(*) FROM queue_heartbeat),
		                                  (SELECT count(*) FROM job_dead_letter WHERE resolved_at IS NULL),
		                                  (SELECT count(*) FROM job_queue WHERE status = 'queued')`)
		t.n++
	}
	t.report(b, "v_queue_health", 100*time.Millisecond)
}

// A 10,000-row INSERT into event_outbox with the NOTIFY bridge on (one coalesced
// notification per domain per statement, a listener attached) against the same insert
// with the bridge off, in the same run: the ratio is the bridge's overhead. A third variant
// with the trigger disabled altogether shows what the gated-off trigger itself costs
// (its transition table is captured even when the gate is closed).
func BenchmarkNotifyBridge10kRowInsert(b *testing.B) {
	db := pgtest.NewDB(b)
	listener := db.Conn(b)
	if _, err := listener.Exec(context.Background(), `LISTEN queue_wake_iu`); err != nil {
		b.Fatal(err)
	}
	const insert = `INSERT INTO event_outbox (event_domain, event_type, event_stream, safe_payload)
	                SELECT 'iu', 'bulk', 's', jsonb_build_object('n', g) FROM generate_series(1, 10000) g`
	var t timer
	var none time.Duration
	for b.Loop() {
		db.Exec(b, `UPDATE dot_config SET value = 'true' WHERE key = 'queue.notify.bridge_enabled'`)
		timed(b, &t.subject, db, insert)
		db.Exec(b, `UPDATE dot_config SET value = 'false' WHERE key = 'queue.notify.bridge_enabled'`)
		timed(b, &t.baseline, db, insert)
		db.Exec(b, `ALTER TABLE event_outbox DISABLE TRIGGER trg_event_outbox_wake_notify`)
		timed(b, &none, db, insert)
		db.Exec(b, `ALTER TABLE event_outbox ENABLE TRIGGER trg_event_outbox_wake_notify`)
		t.n++
	}
	t.report(b, "insert-10k-bridge-on", 0)
	noneMS := float64(none.Microseconds()) / 1000 / float64(t.n)
	b.ReportMetric(noneMS, "no-trigger-ms/op")
	b.ReportMetric(float64(t.subject.Microseconds())/1000/float64(t.n)/noneMS, "on-vs-no-trigger-ratio")
	// Drain what the listener got: one notification per bridged statement.
	got := 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_, err := listener.WaitForNotification(ctx)
		cancel()
		if err != nil {
			break
		}
		got++
	}
	b.ReportMetric(float64(got)/float64(t.n), "notifications/insert")
}
