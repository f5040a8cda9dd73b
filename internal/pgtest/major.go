package pgtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// MajorHarness starts a private cluster of PostgreSQL <major> (MajorBinDir), checks that it
// runs that major, and returns a harness on it: h.NewDBOn(t, true) gives migrated databases.
// The cluster and the harness end with t. For the rules that must hold on one major in
// particular (13, the oldest supported: its run-time partition pruning refuses some query
// shapes that later majors accept).
func MajorHarness(t testing.TB, major int) *Harness {
	t.Helper()
	return startMajorHarness(t, major, MajorBinDir(t, major), false, LocalOptions{})
}

// MajorHarnessWith is MajorHarness on a cluster started with lo: for a rule that needs a
// setting the shared cluster does not have (max_prepared_transactions, say) on every
// supported major. A major without binaries of its own under MajorBinDir's path (15, the
// major the default local binaries run here) runs from the default local binaries, when
// they are that major (else it is unavailable: a failure in CI, a skip elsewhere).
func MajorHarnessWith(t testing.TB, major int, lo LocalOptions) *Harness {
	t.Helper()
	bindir, fallback := majorBinDirPath(major), false
	if _, err := os.Stat(filepath.Join(bindir, "postgres")); err != nil {
		bindir, fallback = "", true
	}
	return startMajorHarness(t, major, bindir, fallback, lo)
}

// startMajorHarness starts the cluster from bindir ("" = the default local binaries) and
// checks its major: a mismatch fails the test, or, when the default binaries stood in for
// a major's own (fallback), reports the major unavailable.
func startMajorHarness(t testing.TB, major int, bindir string, fallback bool, lo LocalOptions) *Harness {
	t.Helper()
	ctx := Ctx(t)
	srv, err := StartLocalWith(ctx, bindir, lo)
	if err != nil {
		t.Fatalf("starting PostgreSQL %d from %q: %v", major, bindir, err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	c, err := pgx.Connect(ctx, srv.AdminURL)
	if err != nil {
		t.Fatalf("connecting to PostgreSQL %d: %v", major, err)
	}
	var version string
	err = c.QueryRow(ctx, `SHOW server_version`).Scan(&version)
	c.Close(context.Background())
	if err != nil {
		t.Fatalf("reading the server version: %v", err)
	}
	if !strings.HasPrefix(version, fmt.Sprintf("%d.", major)) {
		if fallback {
			Unavailable(t, "no PostgreSQL %d server binaries (set PGTEST_PG%d_BINDIR, or run .ci/run); the default ones run %s", major, major, version)
		}
		t.Fatalf("%s runs PostgreSQL %s, want %d", bindir, version, major)
	}
	h, err := NewHarness(ctx, Options{SkipContainer: true,
		Env: func(k string) string {
			if k == "TEST_DATABASE_URL" {
				return srv.AdminURL
			}
			return ""
		}})
	if err != nil {
		t.Fatalf("harness on PostgreSQL %d: %v", major, err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}
