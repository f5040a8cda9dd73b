package pgtest

import (
	"context"
	"testing"
	"time"
)

// requireServer fails in CI and skips elsewhere when no PostgreSQL can be had.
func requireServer(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		Unavailable(t, "no PostgreSQL: %v", err)
	}
}

func checkMigratedClone(t *testing.T, h *Harness) {
	t.Helper()
	db := h.NewDBOn(t, true)
	var n int
	db.QueryRow(t, `SELECT count(*) FROM event_type_registry WHERE event_domain = 'system'`, nil, &n)
	if n != 2 {
		t.Fatalf("clone of the migrated template has %d seeded system event types, want 2", n)
	}
}

// Harness rule: with no TEST_DATABASE_URL the harness brings its own server
// (testcontainers when Docker answers, else local binaries) and clones migrated databases.
func TestHarness_WithoutTestDatabaseURL(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h, err := NewHarness(ctx, Options{Env: func(string) string { return "" }})
	requireServer(t, err)
	t.Cleanup(func() { h.Close(context.Background()) })
	if h.Server.Kind == KindEnv {
		t.Fatalf("kind = %s with TEST_DATABASE_URL unset", h.Server.Kind)
	}
	checkMigratedClone(t, h)
}

// Harness rule: TEST_DATABASE_URL wins — pointed at an existing server, the harness
// uses it (starts nothing) and still gives each test a migrated database of its own.
func TestHarness_WithTestDatabaseURL(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	existing, err := StartLocal(ctx)
	requireServer(t, err)
	t.Cleanup(func() { existing.Stop(context.Background()) })

	env := func(k string) string {
		if k == "TEST_DATABASE_URL" {
			return existing.AdminURL
		}
		return ""
	}
	h, err := NewHarness(ctx, Options{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	if h.Server.Kind != KindEnv || h.Server.AdminURL != existing.AdminURL {
		t.Fatalf("kind = %s url = %s, want the existing server", h.Server.Kind, h.Server.AdminURL)
	}
	checkMigratedClone(t, h)
	// Closing an env-sourced harness must not stop the server it did not start.
	h.Close(ctx)
	if err := existing.Restart(ctx); err != nil {
		t.Fatalf("existing server unusable after the harness closed: %v", err)
	}
}

// Harness rule: databases cloned for different tests are isolated from each other.
func TestHarness_ClonesAreIsolated(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h, err := NewHarness(ctx, Options{Env: func(string) string { return "" }, SkipContainer: true})
	requireServer(t, err)
	t.Cleanup(func() { h.Close(context.Background()) })
	a, b := h.NewDBOn(t, true), h.NewDBOn(t, true)
	a.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 'a', 's')`)
	var n int
	b.QueryRow(t, `SELECT count(*) FROM event_outbox`, nil, &n)
	if n != 0 {
		t.Fatalf("database b sees %d rows written to database a", n)
	}
}
