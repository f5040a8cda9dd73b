package tests

import (
	"context"
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
