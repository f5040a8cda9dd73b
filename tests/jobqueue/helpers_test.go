package jobqueue

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

func ctx(t testing.TB) context.Context { return pgtest.Ctx(t) }

// The JSON-call helpers every SQL test package uses (internal/pgtest/jsoncall.go).
type querier = pgtest.Querier

var (
	callJSON         = pgtest.CallJSON
	callErr          = pgtest.CallErr
	requireJSONEqual = pgtest.RequireJSONEqual
	num              = pgtest.Num
)

func setConfig(t testing.TB, db *pgtest.DB, key, value string) {
	t.Helper()
	db.Exec(t, `INSERT INTO dot_config (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, key, value)
}

func count(t testing.TB, db *pgtest.DB, sql string, args ...any) int {
	t.Helper()
	var n int
	db.QueryRow(t, sql, args, &n)
	return n
}

// asRole opens a session that acts as a fresh login role holding group (or nothing when
// group is ""), the way an executor or operator connects.
func asRole(t testing.TB, db *pgtest.DB, group string) *pgx.Conn {
	t.Helper()
	role := "qh_" + group + "_" + db.Name
	db.Exec(t, `CREATE ROLE `+pgx.Identifier{role}.Sanitize()+` LOGIN`)
	if group != "" {
		db.Exec(t, `GRANT `+pgx.Identifier{group}.Sanitize()+` TO `+pgx.Identifier{role}.Sanitize())
	}
	t.Cleanup(func() {
		c := context.Background()
		_, _ = db.Pool.Exec(c, `DROP OWNED BY `+pgx.Identifier{role}.Sanitize())
		_, _ = db.Pool.Exec(c, `DROP ROLE IF EXISTS `+pgx.Identifier{role}.Sanitize())
	})
	conn := db.Conn(t)
	if _, err := conn.Exec(ctx(t), `SET ROLE `+pgx.Identifier{role}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return conn
}

// enqueue enqueues one job of kind in domain iu and returns its id; extra is a dedupe key and
// max attempts.
func enqueue(t testing.TB, q querier, kind string, extra ...any) string {
	t.Helper()
	var id string
	sql := `SELECT fn_job_enqueue($1, 'iu')::text`
	args := []any{kind}
	if len(extra) == 2 { // dedupe key, max attempts
		sql = `SELECT fn_job_enqueue($1, 'iu', '{"ref": 1}', now(), $2, $3)::text`
		args = append(args, extra...)
	}
	if err := q.QueryRow(ctx(t), sql, args...).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// claim leases up to limit jobs of kind k to worker for 60 s and returns their ids, sorted.
func claim(t testing.TB, q querier, worker string, limit int) []string {
	t.Helper()
	var ids []string
	if err := q.QueryRow(ctx(t), `SELECT coalesce(array_agg(job_id::text ORDER BY job_id), '{}') FROM fn_job_claim($1, '{k}', $2, 60)`, worker, limit).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	return ids
}
