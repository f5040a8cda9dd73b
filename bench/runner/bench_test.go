package runner

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/iu-core/event-worker/internal/migrate"
	"github.com/iu-core/event-worker/internal/pgtest"
	"github.com/iu-core/event-worker/internal/runnertest"
)

var runnerBin runnertest.Binary

func binary(b testing.TB) string {
	b.Helper()
	return runnerBin.Path(b)
}

type proc struct {
	cmd  *exec.Cmd
	addr string
	done chan struct{}
}

func startRun(b testing.TB, url string, args ...string) *proc {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(binary(b), append([]string{"run", "--database-url", url, "--http-addr", addr, "--log-level", "warn"}, args...)...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &proc{cmd: cmd, addr: addr, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	waitFor(b, 15*time.Second, "runner ready", func() bool { return p.metric("iu_runner_last_pass_timestamp_seconds ") > 0 })
	return p
}

func (p *proc) metric(prefix string) float64 {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + p.addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, prefix) {
			f := strings.Fields(l)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			return v
		}
	}
	return -1
}

func waitFor(b testing.TB, within time.Duration, what string, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	b.Fatalf("%s: not within %s", what, within)
}

// commitTSServer gives a database on a server with track_commit_timestamp = on: a private
// local cluster (the setting needs a restart, which the shared harness server must not get).
func commitTSServer(b *testing.B) (string, *pgxpool.Pool) {
	ctx := context.Background()
	srv, err := pgtest.StartLocal(ctx)
	if err != nil {
		b.Skipf("latency needs a private local cluster (track_commit_timestamp): %v", err)
	}
	b.Cleanup(func() { _ = srv.Stop(context.Background()) })
	admin, err := pgxpool.New(ctx, srv.AdminURL)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "ALTER SYSTEM SET track_commit_timestamp = on"); err != nil {
		b.Fatal(err)
	}
	admin.Close()
	if err := srv.Restart(ctx); err != nil {
		b.Fatal(err)
	}
	if err := migrate.Up(ctx, srv.AdminURL); err != nil {
		b.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, srv.AdminURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	var on string
	if err := pool.QueryRow(ctx, "SHOW track_commit_timestamp").Scan(&on); err != nil || on != "on" {
		b.Fatalf("track_commit_timestamp = %q (%v)", on, err)
	}
	for _, sql := range []string{
		`SELECT fn_iu_route_worker_register('iu_outbound_default')`,
		`INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'bench.event')`,
		`INSERT INTO iu_outbound_route (event_domain, event_type, event_stream, route_key, enabled, dry_run) VALUES ('iu', 'bench.event', 'bench', 'bench_route', true, true)`,
		`UPDATE dot_config SET value = 'true' WHERE key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled')`,
		`INSERT INTO dot_config (key, value) VALUES ('queue.notify.bridge_enabled', 'false') ON CONFLICT (key) DO UPDATE SET value = 'false'`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			b.Fatalf("%s: %v", sql, err)
		}
	}
	return srv.AdminURL, pool
}

// measure emits n single events one at a time (each waits for its attempt) and returns
// the commit-to-commit latencies in milliseconds, sorted.
func measure(b *testing.B, pool *pgxpool.Pool, n int, spread time.Duration) []float64 {
	ctx := context.Background()
	ids := make([]string, 0, n)
	for i := 0; i < n; i++ {
		if spread > 0 { // land at a random phase of the poll cycle
			time.Sleep(rand.N(spread))
		}
		var id string
		if err := pool.QueryRow(ctx, `SELECT fn_iu_emit_event('iu', 'bench.event', 'bench')::text`).Scan(&id); err != nil {
			b.Fatal(err)
		}
		waitFor(b, 10*time.Second, "attempt of "+id, func() bool {
			var ok bool
			_ = pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM iu_route_attempt WHERE event_ref = $1::uuid)`, id).Scan(&ok)
			return ok
		})
		ids = append(ids, id)
	}
	rows, err := pool.Query(ctx, `
		SELECT extract(epoch FROM pg_xact_commit_timestamp(a.xmin) - pg_xact_commit_timestamp(e.xmin)) * 1000
		  FROM event_outbox e JOIN iu_route_attempt a ON a.event_ref = e.id
		 WHERE e.id = ANY ($1::uuid[])`, ids)
	if err != nil {
		b.Fatal(err)
	}
	var ms []float64
	for rows.Next() {
		var v float64
		if err := rows.Scan(&v); err != nil {
			b.Fatal(err)
		}
		ms = append(ms, v)
	}
	if rows.Err() != nil || len(ms) != n {
		b.Fatalf("read %d latencies of %d: %v", len(ms), n, rows.Err())
	}
	slices.Sort(ms)
	return ms
}

func pct(sorted []float64, p float64) float64 {
	i := int(p/100*float64(len(sorted)-1) + 0.5)
	return sorted[i]
}

// BenchmarkWakeLatency: event commit -> attempt commit, NOTIFY path vs fallback poll.
func BenchmarkWakeLatency(b *testing.B) {
	url, pool := commitTSServer(b)
	ctx := context.Background()
	samples := max(b.N, 200)

	// Baseline first: hybrid with the bridge off, so only the fallback poll wakes the runner.
	const basePoll = 250 * time.Millisecond
	baseN := 40
	base := startRun(b, url, "--mode", "hybrid", "--poll-interval", basePoll.String())
	baseMS := measure(b, pool, baseN, basePoll)
	_ = base.cmd.Process.Signal(syscall.SIGTERM)
	<-base.done

	// NOTIFY path: bridge on, poll far away.
	if _, err := pool.Exec(ctx, `UPDATE dot_config SET value = 'true' WHERE key = 'queue.notify.bridge_enabled'`); err != nil {
		b.Fatal(err)
	}
	p := startRun(b, url, "--mode", "hybrid", "--poll-interval", "60s")
	waitFor(b, 10*time.Second, "listener up", func() bool { return p.metric("iu_runner_listener_up ") == 1 })
	b.ResetTimer()
	ms := measure(b, pool, samples, 0)
	b.StopTimer()
	if p.metric(`iu_runner_wakeups_total{source="poll"}`) != 0 {
		b.Fatalf("the 60s poll fired during the NOTIFY measurement")
	}

	p50, p99 := pct(ms, 50), pct(ms, 99)
	b.ReportMetric(p50, "notify_p50_ms")
	b.ReportMetric(p99, "notify_p99_ms")
	b.ReportMetric(pct(baseMS, 50), "poll_p50_ms")
	b.ReportMetric(pct(baseMS, 99), "poll_p99_ms")
	row := func(label string, v []float64) string {
		return fmt.Sprintf("  %-40s %7d  %7.2f  %7.2f  %7.2f  %7.2f", label, len(v), pct(v, 50), pct(v, 90), pct(v, 99), v[len(v)-1])
	}
	b.Logf("\nwake-up latency, event commit -> attempt commit (server commit timestamps)\n"+
		"  %-40s %7s  %7s  %7s  %7s  %7s\n%s   target p50<=10 p99<=50\n%s",
		"path", "samples", "p50 ms", "p90 ms", "p99 ms", "max ms",
		row("NOTIFY (hybrid, poll 60s)", ms),
		row(fmt.Sprintf("fallback poll (hybrid, %s, no NOTIFY)", basePoll), baseMS))
	if p50 > 10 || p99 > 50 {
		b.Errorf("NOTIFY latency over target: p50 %.2f ms (<=10), p99 %.2f ms (<=50)", p50, p99)
	}
}

// BenchmarkIdleRSS: VmRSS of an idle `iu-runner run` (hybrid, listener up) once it settles.
func BenchmarkIdleRSS(b *testing.B) {
	db := pgtest.NewDB(b)
	db.Exec(b, `SELECT fn_iu_route_worker_register('iu_outbound_default')`)
	p := startRun(b, db.URL, "--mode", "hybrid")
	waitFor(b, 10*time.Second, "listener up", func() bool { return p.metric("iu_runner_listener_up ") == 1 })
	// settled: three readings 300 ms apart within 1% of each other
	var readings []float64
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		readings = append(readings, vmRSS(b, p.cmd.Process.Pid))
		if n := len(readings); n >= 3 {
			lo, hi := slices.Min(readings[n-3:]), slices.Max(readings[n-3:])
			if hi-lo <= hi*0.01 {
				break
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
	rss := readings[len(readings)-1]
	b.ReportMetric(rss, "idle_rss_MB")
	b.Logf("\nidle RSS of iu-runner run (hybrid, listener up, /proc/%d/status VmRSS): %.1f MB  target <= 30 MB", p.cmd.Process.Pid, rss)
	if rss > 30 {
		b.Errorf("idle RSS %.1f MB over the 30 MB target", rss)
	}
}

func vmRSS(b testing.TB, pid int) float64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatalf("reading VmRSS: %v", err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			f := strings.Fields(l)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	b.Fatal("no VmRSS line")
	return 0
}
