package retention

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule: partitioning, the conversion and retention work on PostgreSQL 13, the oldest
// supported version (its run-time partition pruning refuses some query shapes that 15
// accepts: this found one). The core scenarios run on a PostgreSQL 13 cluster: retention,
// the conversion, and maintenance catching up from behind (a default partition detached and
// attached as a range partition).
func TestRetention_PostgreSQL13(t *testing.T) {
	t.Parallel()
	bindir := pgtest.PG13BinDir(t)
	ctx := pgtest.Ctx(t)
	srv, err := pgtest.StartLocalAt(ctx, bindir)
	if err != nil {
		t.Fatalf("starting PostgreSQL 13 from %s: %v", bindir, err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	c, err := pgx.Connect(ctx, srv.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	var version string
	if err := c.QueryRow(ctx, `SHOW server_version`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	c.Close(context.Background())
	if !strings.HasPrefix(version, "13.") {
		t.Fatalf("%s runs PostgreSQL %s, want 13", bindir, version)
	}
	h, err := pgtest.NewHarness(ctx, pgtest.Options{SkipContainer: true,
		Env: func(k string) string {
			if k == "TEST_DATABASE_URL" {
				return srv.AdminURL
			}
			return ""
		}})
	if err != nil {
		t.Fatalf("harness on PostgreSQL 13: %v", err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })

	t.Run("retention", func(t *testing.T) { dropsOnlyWhatEveryCursorPassed(t, setupOn(t, h.NewDBOn(t, true))) })
	t.Run("conversion", func(t *testing.T) { conversionKeepsEveryRowAndCursor(t, h.NewDBOn(t, true)) })
	t.Run("default_caught_up", func(t *testing.T) { defaultPartitionCatchesWhatMaintenanceMissed(t, setupOn(t, h.NewDBOn(t, true))) })
}
