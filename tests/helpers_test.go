package tests

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iu-core/event-worker/internal/pgtest"
)

func ctx(t testing.TB) context.Context { return pgtest.Ctx(t) }

func requireSQLState(t testing.TB, err error, code string) *pgconn.PgError {
	t.Helper()
	return pgtest.RequireSQLState(t, err, code)
}

func osDir(path string) fs.FS { return os.DirFS(path) }

// pgErr returns the server's error inside err, or nil when err is not one.
func pgErr(err error) *pgconn.PgError {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}
