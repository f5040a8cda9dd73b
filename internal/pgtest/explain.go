package pgtest

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ExplainedConn opens a session of db with auto_explain on for every statement, nested ones
// included (the statements a PL/pgSQL function runs, planned as the function plans them),
// with ANALYZE, reported to the session as notices; extra settings (e.g.
// "auto_explain.log_format = json") are applied after those. plans returns what was
// reported since its last call. A server without auto_explain makes the test unavailable
// (a failure in CI).
func ExplainedConn(t testing.TB, db *DB, extra ...string) (conn *pgx.Conn, plans func() string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var out strings.Builder
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		out.WriteString(n.Message + "\n")
		mu.Unlock()
	}
	conn, err = pgx.ConnectConfig(Ctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	settings := []string{`LOAD 'auto_explain'`, `SET auto_explain.log_min_duration = 0`, `SET auto_explain.log_nested_statements = on`,
		`SET auto_explain.log_analyze = on`, `SET auto_explain.log_level = notice`, `SET client_min_messages = notice`}
	for _, e := range extra {
		settings = append(settings, `SET `+e)
	}
	for _, s := range settings {
		if _, err := conn.Exec(Ctx(t), s); err != nil {
			Unavailable(t, "auto_explain unavailable: %v", err)
		}
	}
	return conn, func() string {
		mu.Lock()
		defer mu.Unlock()
		s := out.String()
		out.Reset()
		return s
	}
}
