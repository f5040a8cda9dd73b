package pgtest

import (
	"context"
	"errors"
	"os"
	"strconv"
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

// EnvInt reads a benchmark or test size from the environment: def when the variable is
// unset, the integer when it is at least least, and a failure naming the variable
// otherwise (a typo must not silently run the default size).
func EnvInt(tb testing.TB, name string, def, least int) int {
	tb.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < least {
		tb.Fatalf("%s=%q: want an integer >= %d", name, s, least)
	}
	return n
}
