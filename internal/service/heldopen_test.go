package service

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/metrics"
	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule (issue 21): a session that keeps a stale-check open can no longer blind the runner,
// and the runner says who it is. Before, the runner's check answered emitted 0,
// skipped_locked 3 while that session lived: no alert, nothing in the log, no metric. Now
// the runner's own check alerts all three anyway, logs at WARN naming the holder (pid,
// login) and exports iu_runner_stale_check_contended 3, on which IuStaleCheckHeldOpen fires.
func TestRunnerNamesTheSessionHoldingTheStaleCheck(t *testing.T) {
	db := pgtest.NewDB(t)
	db.Exec(t, `UPDATE dot_config SET value = '0' WHERE key = 'queue.heartbeat.stale_threshold_seconds'`)
	db.Exec(t, `SELECT fn_queue_heartbeat_register('silent_' || g, 'Agent', '{}', 10, 30) FROM generate_series(1, 3) g`)
	db.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now() - interval '1 hour'`)
	holder := db.Conn(t)
	tx, err := holder.Begin(pgtest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(pgtest.Ctx(t)) //nolint:errcheck
	var pid int
	if err := tx.QueryRow(pgtest.Ctx(t), `SELECT pg_backend_pid() FROM (SELECT fn_queue_stale_check()) x`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	var logs logSink
	m := metrics.New()
	c := cfg()
	c.ExecutorID = ""
	s := startService(t, New(c, realStore(runnerPool(t, db.URL, 5*time.Second)), nil, logs.logger(), m))
	eventually(t, "contended gauge", func() bool { return gaugeValueOf(t, m, "iu_runner_stale_check_contended") == 3 })
	s.stop(t)
	out := logs.String()
	if !strings.Contains(out, `"level":"WARN"`) || !strings.Contains(out, "another session holds the alert state") ||
		!strings.Contains(out, fmt.Sprintf("pid %d, login ", pid)) {
		t.Fatalf("the runner must say at WARN which session holds the stale-check:\n%s", out)
	}
	var alerts int
	db.QueryRow(t, `SELECT count(*)::int FROM event_outbox WHERE event_type = 'queue_worker_silent'`, nil, &alerts)
	if alerts != 3 {
		t.Fatalf("committed alerts while the holder's transaction lives: %d, want 3", alerts)
	}
}
