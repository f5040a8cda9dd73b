package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/pgtest"
	"github.com/iu-core/event-worker/internal/runnertest"
)

const worker = "iu_outbound_default"

// runnerBin is ./cmd/iu-runner, built once per test process (IU_RUNNER_TEST_RACE=1 builds
// the binary itself under the race detector).
var runnerBin = runnertest.Binary{Race: os.Getenv("IU_RUNNER_TEST_RACE") != ""}

func binary(t testing.TB) string {
	t.Helper()
	return runnerBin.Path(t)
}

// cleanEnv is the test process environment without any database settings, so each test
// says exactly where the binary connects.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "DATABASE_URL" || strings.HasPrefix(k, "PG") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

type result struct {
	stdout, stderr string
	code           int
}

// runCLI runs the binary to completion (30s cap).
func runCLI(t testing.TB, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("running iu-runner %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return result{out.String(), errb.String(), code}
}

// setup gives a migrated database with the default worker registered, the test event
// type registered, and the gates as asked.
func setup(t *testing.T, gatesOpen, bridge bool) *pgtest.DB {
	t.Helper()
	db := pgtest.NewDB(t)
	db.Exec(t, `SELECT fn_iu_route_worker_register($1)`, worker)
	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type, description) VALUES ('iu', 'runner.test', 'tests/runner')`)
	if gatesOpen {
		db.Exec(t, `UPDATE dot_config SET value = 'true' WHERE key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled')`)
	}
	if bridge {
		db.Exec(t, `INSERT INTO dot_config (key, value) VALUES ('queue.notify.bridge_enabled', 'true')
		            ON CONFLICT (key) DO UPDATE SET value = 'true'`)
	}
	return db
}

func emit(t testing.TB, db *pgtest.DB, n int) {
	t.Helper()
	db.Exec(t, `SELECT fn_iu_emit_event('iu', 'runner.test', 'tests') FROM generate_series(1, $1)`, n)
}

func attempts(t testing.TB, db *pgtest.DB) int64 {
	t.Helper()
	var n int64
	db.QueryRow(t, `SELECT count(*) FROM iu_route_attempt WHERE worker_name = $1`, []any{worker}, &n)
	return n
}

// waitFor polls cond until it holds or the deadline passes; the failure names the last state.
func waitFor(t testing.TB, within time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	last := ""
	for time.Since(start) < within {
		ok, state := cond()
		if ok {
			return time.Since(start)
		}
		last = state
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s (last state: %s)", what, within, last)
	return 0
}

// tickSummary is the part of tick's JSON the tests read.
type tickSummary struct {
	OK       bool   `json:"ok"`
	Database string `json:"database"`
	Claimed  int64  `json:"claimed"`
	Workers  []struct {
		Worker  string `json:"worker"`
		Runs    int    `json:"runs"`
		Claimed int64  `json:"claimed"`
		Gated   bool   `json:"gated"`
		Busy    bool   `json:"busy"`
		Stopped string `json:"stopped"`
	} `json:"workers"`
	StaleCheck map[string]any `json:"stale_check"`
	Reaper     map[string]any `json:"reaper"`
	Partitions map[string]any `json:"partitions"`
}

func parseTick(t testing.TB, r result) tickSummary {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 1 {
		t.Fatalf("tick printed %d lines on stdout, want exactly one JSON summary:\n%s\nstderr:\n%s", len(lines), r.stdout, r.stderr)
	}
	var s tickSummary
	if err := json.Unmarshal([]byte(lines[0]), &s); err != nil {
		t.Fatalf("tick stdout is not JSON: %v\n%s", err, r.stdout)
	}
	return s
}

// proc is a running `iu-runner run`.
type proc struct {
	cmd    *exec.Cmd
	addr   string
	stderr *syncBuffer
	done   chan struct{}
	err    error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startRun starts `iu-runner run` against db and waits until /healthz answers.
func startRun(t *testing.T, db *pgtest.DB, args ...string) *proc {
	t.Helper()
	addr := freeAddr(t)
	full := append([]string{"run", "--database-url", db.URL, "--http-addr", addr, "--log-level", "debug",
		"--executor-id", "iu-runner:test"}, args...)
	cmd := exec.Command(binary(t), full...)
	cmd.Env = cleanEnv()
	p := &proc{cmd: cmd, addr: addr, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("iu-runner run stderr:\n%s", tailLines(p.stderr.String(), 40))
		}
	})
	waitFor(t, 15*time.Second, "run serves /healthz", func() (bool, string) {
		code, body := p.get("/healthz")
		return code == 200, fmt.Sprintf("%d %s", code, body)
	})
	return p
}

func (p *proc) get(path string) (int, string) {
	c := http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get("http://" + p.addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// metric returns the value of the first sample whose name and labels start with prefix.
func (p *proc) metric(prefix string) (float64, bool) {
	code, body := p.get("/metrics")
	if code != 200 {
		return 0, false
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, prefix) {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			return v, err == nil
		}
	}
	return 0, false
}

func (p *proc) waitMetric(t *testing.T, prefix string, within time.Duration, ok func(float64) bool) {
	t.Helper()
	waitFor(t, within, "metric "+prefix, func() (bool, string) {
		v, found := p.metric(prefix)
		return found && ok(v), fmt.Sprintf("found=%v value=%v", found, v)
	})
}

// stop sends SIGTERM and requires exit 0 within the limit.
func (p *proc) stop(t *testing.T, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(within):
		t.Fatalf("iu-runner run did not exit within %s of SIGTERM", within)
	}
	if p.err != nil {
		t.Fatalf("iu-runner run exited with %v after SIGTERM, want 0\n%s", p.err, tailLines(p.stderr.String(), 20))
	}
	return time.Since(start)
}

func tailLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// errorRecord parses stderr: every line that is not usage text must be a JSON log record
// (one object per line); it returns the last ERROR record.
func errorRecord(t testing.TB, stderr string) map[string]any {
	t.Helper()
	var rec map[string]any
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !strings.HasPrefix(l, "{") {
			continue // usage text after a usage error
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stderr line is not one JSON object: %v\n%s", err, l)
		}
		if m["level"] == "ERROR" {
			rec = m
		}
	}
	if rec == nil {
		t.Fatalf("no JSON error record on stderr:\n%s", stderr)
	}
	return rec
}
