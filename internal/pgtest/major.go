package pgtest

import (
	"context"
	"fmt"
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
	bindir := MajorBinDir(t, major)
	ctx := Ctx(t)
	srv, err := StartLocalAt(ctx, bindir)
	if err != nil {
		t.Fatalf("starting PostgreSQL %d from %s: %v", major, bindir, err)
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
