package runtimescripts

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// scriptDir is sql/iu-core/runtime on disk: the files operators run.
func scriptDir(t testing.TB) string {
	t.Helper()
	_, here, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test source")
	}
	return filepath.Join(filepath.Dir(here), "..", "..", "sql", "iu-core", "runtime")
}

func psqlBin(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("psql"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/psql"); err == nil {
		return "/usr/bin/psql"
	}
	pgtest.Unavailable(t, "psql not found on PATH or at /usr/bin/psql")
	return ""
}

// psqlResult is one psql run.
type psqlResult struct {
	Stdout, Stderr string
	Exit           int
}

// runScript runs `psql URL -X -v ON_ERROR_STOP=1 -f script` plus extra psql flags.
// readOnly adds PGOPTIONS='-c default_transaction_read_only=on' to the environment,
// so any write the script attempts fails with 25006.
func runScript(t testing.TB, db *pgtest.DB, script string, readOnly bool, extra ...string) psqlResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{db.URL, "-X", "-v", "ON_ERROR_STOP=1"}, extra...)
	args = append(args, "-f", filepath.Join(scriptDir(t), script))
	cmd := exec.CommandContext(ctx, psqlBin(t), args...)
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") { // no stray PGOPTIONS/PGDATABASE from the caller
			env = append(env, kv)
		}
	}
	if readOnly {
		env = append(env, "PGOPTIONS=-c default_transaction_read_only=on")
	}
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	res := psqlResult{Stdout: out.String(), Stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.Exit = ee.ExitCode()
	default:
		t.Fatalf("running psql: %v", err)
	}
	return res
}

// mustRun runs a script and fails the test unless psql exits 0.
func mustRun(t testing.TB, db *pgtest.DB, script string, readOnly bool) psqlResult {
	t.Helper()
	r := runScript(t, db, script, readOnly)
	if r.Exit != 0 {
		t.Fatalf("%s: psql exit %d\nstdout:\n%s\nstderr:\n%s", script, r.Exit, r.Stdout, r.Stderr)
	}
	return r
}

// check is one row of 070: check | pass | detail.
type check struct {
	Name   string
	Pass   bool
	Detail string
}

// verify runs 070 read-only in unaligned, tuples-only, tab-separated form and parses
// its rows.
func verify(t testing.TB, db *pgtest.DB) ([]check, psqlResult) {
	t.Helper()
	r := runScript(t, db, "070_route_worker_verification.sql", true, "-q", "-A", "-t", "-F", "\t")
	var checks []check
	for _, line := range strings.Split(r.Stdout, "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 3 || !strings.HasPrefix(f[0], "W") {
			continue
		}
		checks = append(checks, check{Name: f[0], Pass: f[1] == "t", Detail: f[2]})
	}
	return checks, r
}

// checkByID finds the row whose name starts with id ("W9 ").
func checkByID(t testing.TB, checks []check, id string) check {
	t.Helper()
	for _, c := range checks {
		if strings.HasPrefix(c.Name, id+" ") {
			return c
		}
	}
	t.Fatalf("no %s row in %+v", id, checks)
	return check{}
}

func gateValue(t testing.TB, db *pgtest.DB, key string) (string, bool) {
	t.Helper()
	var v *string
	db.QueryRow(t, `SELECT (SELECT value FROM public.dot_config WHERE key = $1)`, []any{key}, &v)
	if v == nil {
		return "", false
	}
	return *v, true
}
