package runner

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// Rule (issue 21): a closed gate with waiting events is reported by health and /metrics,
// and health exits 3 once it has lasted the grace (--gated-grace). Before, with both gates
// closed and events piling up, tick said ok and health exited 0: every run is a clean gated
// no-op, and nothing else looked.
func TestClosedGateWithWaitingEventsIsReported(t *testing.T) {
	t.Parallel()
	db := setup(t, false, false)
	emit(t, db, 5)
	if r := runCLI(t, cleanEnv(), "tick", "--database-url", db.URL); r.code != 0 || !parseTick(t, r).Workers[0].Gated {
		t.Fatalf("tick over closed gates: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r := runCLI(t, cleanEnv(), "health", "--database-url", db.URL, "--gated-grace", "1h")
	if r.code != 0 || !strings.Contains(r.stdout, "worker "+worker+": a closed gate has kept 5 event(s) waiting") {
		t.Fatalf("inside the grace: exit %d (want 0, and the gate named)\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, cleanEnv(), "health", "--database-url", db.URL, "--gated-grace", "0s", "--json")
	var out struct {
		OK     bool `json:"ok"`
		Counts struct {
			Gated int `json:"gated"`
		} `json:"counts"`
		Rows []struct {
			Source  string `json:"source"`
			Status  string `json:"status_hint"`
			Backlog *int64 `json:"backlog"`
			Problem string `json:"problem"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("health --json: %v\n%s", err, r.stdout)
	}
	problem := ""
	for _, row := range out.Rows {
		if row.Source == "cursor" && row.Status == "gated" && row.Backlog != nil && *row.Backlog == 5 {
			problem = row.Problem
		}
	}
	if r.code != 3 || out.OK || out.Counts.Gated != 1 || problem != "gated" {
		t.Fatalf("past the grace: exit %d (want 3), ok %v, gated %d, problem %q\n%s", r.code, out.OK, out.Counts.Gated, problem, r.stdout)
	}

	p := startRun(t, db, "--mode", "poll")
	p.waitMetric(t, `iu_queue_health_gated_waiting_seconds{domain="iu",source="cursor",subject="`+worker+`"}`, 10*time.Second,
		func(float64) bool { return true })
	if v, _ := p.metric(`iu_queue_health_backlog{domain="iu",source="cursor",subject="` + worker + `"}`); v != 5 {
		t.Fatalf("the count of waiting events: %v, want 5", v)
	}
	p.stop(t, 10*time.Second)
}

// Rule (issue 21): the runner's log names a session that holds a worker's lock. A role with
// no grants at all takes the worker's advisory lock: every run answers busy. Before, the
// runner said nothing (busy is a clean answer) and health named no one; now tick logs it at
// WARN with the holder's pid and login, and health names it under the table.
func TestRunnerNamesTheWorkersLockHolder(t *testing.T) {
	t.Parallel()
	db := setup(t, true, false)
	role := "rn_nogrant_" + db.Name
	db.Exec(t, `CREATE ROLE `+role+` LOGIN PASSWORD 'pw'`)
	t.Cleanup(func() { _, _ = db.Pool.Exec(t.Context(), `DROP ROLE IF EXISTS `+role) })
	var lockID int
	db.QueryRow(t, `SELECT lock_id FROM iu_route_worker_cursor WHERE worker_name = $1`, []any{worker}, &lockID)
	nobody := db.ConnAs(t, role, "pw")
	var pid int
	if err := nobody.QueryRow(t.Context(), `SELECT pg_backend_pid() FROM (SELECT pg_advisory_lock(26997, $1)) x`, lockID).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, cleanEnv(), "tick", "--database-url", db.URL)
	want := fmt.Sprintf("pid %d, login %s", pid, role)
	if r.code != 0 || !parseTick(t, r).Workers[0].Busy || !strings.Contains(r.stderr, `"level":"WARN"`) ||
		!strings.Contains(r.stderr, "a session holds its lock") || !strings.Contains(r.stderr, want) {
		t.Fatalf("tick behind a held worker lock: exit %d, the log must name %q at WARN\n%s", r.code, want, r.stderr)
	}
	r = runCLI(t, cleanEnv(), "health", "--database-url", db.URL)
	if !strings.Contains(r.stdout, "worker "+worker+": lock held by "+want) {
		t.Fatalf("health must name the lock holder %q:\n%s", want, r.stdout)
	}
}
