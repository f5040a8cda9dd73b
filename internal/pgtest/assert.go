package pgtest

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Ctx returns a context cancelled when t ends, bounded well inside the go test timeout.
func Ctx(t testing.TB) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return c
}

// RequireSQLState fails t unless err is a PostgreSQL error with the given SQLSTATE, and
// returns it for checks of message and hint.
func RequireSQLState(t testing.TB, err error, code string) *pgconn.PgError {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		t.Fatalf("want SQLSTATE %s, got %v", code, err)
	}
	if pgErr.Code != code {
		t.Fatalf("want SQLSTATE %s, got %s: %s (hint: %s)", code, pgErr.Code, pgErr.Message, pgErr.Hint)
	}
	return pgErr
}

// Unavailable reports that something a test needs (a PostgreSQL server, its binaries,
// psql, the goose CLI) cannot be had. Under CI it fails the test — a CI run never passes
// by skipping what it was meant to prove; elsewhere it skips with the reason.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set, so this is a failure, not a skip: "+format, args...)
	}
	t.Skipf(format, args...)
}
