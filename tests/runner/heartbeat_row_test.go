package runner

import (
	"strings"
	"testing"
	"time"
)

// Rule (issue 21): the runner's default --executor-id is shared by no two live runners, and a
// restarted runner leaves no row behind. The chosen design: the id stays stable
// (iu-runner:<host>), and the row is held by one runner process at a time
// (fn_queue_runner_beat: an instance uuid per process, renewed by every beat, handed back on
// a clean stop, free 30 s after a crashed holder's last beat). Two real runners with one id:
// the second is the first's standby (it beats nothing, says so naming the holder, and
// exports iu_runner_heartbeat_standby 1); the first stops and the second holds the row
// within a beat; a tick with that id meanwhile fails naming the holder; once the second
// stops too, the tick beats it. Before, both runners upserted the row through
// fn_queue_heartbeat_tick, so either one's death was hidden by the other's beats.
func TestRunnerHeartbeatRowIsHeldByOneRunner(t *testing.T) {
	t.Parallel()
	db := setup(t, true, false)
	const id = "iu-runner:shared"
	instance := func() string {
		var v *string
		db.QueryRow(t, `SELECT (SELECT runner_instance::text FROM queue_heartbeat WHERE executor_id = $1)`, []any{id}, &v)
		if v == nil {
			return ""
		}
		return *v
	}
	args := []string{"--mode", "poll", "--poll-interval", "100ms", "--executor-id", id}
	a := startRun(t, db, args...)
	waitFor(t, 10*time.Second, "runner a holds the row", func() (bool, string) {
		v := instance()
		return v != "", "instance " + v
	})
	held := instance()
	b := startRun(t, db, args...)
	b.waitMetric(t, "iu_runner_heartbeat_standby", 10*time.Second, func(v float64) bool { return v == 1 })
	if v, _ := a.metric("iu_runner_heartbeat_standby"); v != 0 {
		t.Fatalf("the holder reports standby %v", v)
	}
	if !strings.Contains(b.stderr.String(), "another live runner holds") || !strings.Contains(b.stderr.String(), `"holder_instance":"`+held+`"`) {
		t.Fatalf("the standby must say so once, naming the holder:\n%s", tailLines(b.stderr.String(), 20))
	}
	time.Sleep(300 * time.Millisecond) // three of b's beat intervals: still a's row
	if got := instance(); got != held {
		t.Fatalf("the standby took the row from a live holder: %s -> %s", held, got)
	}

	// A tick with the same id fails while a live runner holds the row, and says by whom.
	r := runCLI(t, cleanEnv(), "tick", "--database-url", db.URL, "--executor-id", id)
	if r.code != 1 || !strings.Contains(r.stderr, "held by another live runner") {
		t.Fatalf("tick with a held id: exit %d\n%s", r.code, r.stderr)
	}

	// The holder stops cleanly: it hands the row back and the standby holds it at once.
	a.stop(t, 10*time.Second)
	b.waitMetric(t, "iu_runner_heartbeat_standby", 5*time.Second, func(v float64) bool { return v == 0 })
	waitFor(t, 5*time.Second, "runner b holds the row", func() (bool, string) {
		v := instance()
		return v != "" && v != held, "instance " + v
	})
	var age float64
	db.QueryRow(t, `SELECT extract(epoch FROM now() - last_beat_at)::float8 FROM queue_heartbeat WHERE executor_id = $1`, []any{id}, &age)
	if age > 5 {
		t.Fatalf("the row is %.1f s old with a live runner", age)
	}
	b.stop(t, 10*time.Second)
	if got := instance(); got != "" {
		t.Fatalf("a stopped runner must hand its row back: %s", got)
	}
	if r := runCLI(t, cleanEnv(), "tick", "--database-url", db.URL, "--executor-id", id); r.code != 0 {
		t.Fatalf("tick with a free id: exit %d\n%s", r.code, r.stderr)
	}
	var ticks int
	db.QueryRow(t, `SELECT ticks_total FROM queue_heartbeat WHERE executor_id = $1`, []any{id}, &ticks)
	if ticks < 3 {
		t.Fatalf("the row was beaten %d times: want a's, b's and the tick's beats", ticks)
	}
}
