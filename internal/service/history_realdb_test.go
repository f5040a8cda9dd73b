package service

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/metrics"
	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule (issue 21, owned here): the runner says so when maintenance or retention cannot take
// its lock. While another session holds the partition-maintenance lock (a call kept open in
// its transaction), the run loop's maintenance and retention answer busy; the runner logs
// each at WARN naming the holder's pid and login, and counts them in
// iu_runner_partition_maintenance_total / iu_runner_retention_runs_total{outcome="busy"}.
func TestService_HistoryLockHolderIsNamed(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	db.Exec(t, `SELECT fn_iu_route_worker_register('w')`)
	db.Exec(t, `SELECT fn_iu_partition_maintain()`) // nothing left to do: the held call below only takes the lock
	holder := db.Conn(t)
	tx, err := holder.Begin(pgtest.Ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	var pid int
	if err := tx.QueryRow(pgtest.Ctx(t), `SELECT pg_backend_pid() FROM (SELECT fn_iu_partition_maintain()) m`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	var log logSink
	m := metrics.New()
	c := cfg()
	c.RetentionInterval = 100 * time.Millisecond
	r := startService(t, New(c, realStore(runnerPool(t, db.URL, 5*time.Second)), nil, log.logger(), m))
	deadline := time.Now().Add(10 * time.Second)
	for counter(t, m, "iu_runner_retention_runs_total", "outcome", "busy") == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	r.stop(t)
	out := log.String()
	if n := counter(t, m, "iu_runner_partition_maintenance_total", "outcome", "busy"); n < 1 {
		t.Errorf("iu_runner_partition_maintenance_total{outcome=busy} = %v, want at least 1", n)
	}
	if n := counter(t, m, "iu_runner_retention_runs_total", "outcome", "busy"); n < 1 {
		t.Errorf("iu_runner_retention_runs_total{outcome=busy} = %v, want at least 1", n)
	}
	for _, what := range []string{"partition maintenance could not take its lock", "retention could not take the partition-maintenance lock"} {
		line := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, what) {
				line = l
			}
		}
		if !strings.Contains(line, `"level":"WARN"`) || !strings.Contains(line, fmt.Sprintf(`"holder_pid":%d`, pid)) ||
			!strings.Contains(line, `"holder_login":"`) {
			t.Errorf("want a WARN line %q naming the holder (pid %d, login), got %q\nlog:\n%s", what, pid, line, out)
		}
	}
}
