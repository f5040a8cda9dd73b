package queuehealth

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iu-core/event-worker/internal/pgtest"
)

func ctx(t testing.TB) context.Context { return pgtest.Ctx(t) }

// obj is a decoded jsonb object (numbers are float64).
type obj = map[string]any

// querier is a pool, a connection or a transaction.
type querier interface {
	QueryRow(context.Context, string, ...any) pgx.Row
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}

// callJSON runs a statement returning one jsonb value and decodes it.
func callJSON(t testing.TB, q querier, sql string, args ...any) obj {
	t.Helper()
	var raw []byte
	if err := q.QueryRow(ctx(t), sql, args...).Scan(&raw); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var out obj
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: decoding %s: %v", sql, raw, err)
	}
	return out
}

// callErr runs a statement that must fail and returns the error.
func callErr(t testing.TB, q querier, sql string, args ...any) error {
	t.Helper()
	_, err := q.Exec(ctx(t), sql, args...)
	if err == nil {
		t.Fatalf("%s: want an error, got none", sql)
	}
	return err
}

func requireJSONEqual(t testing.TB, got obj, want string) {
	t.Helper()
	var w obj
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Fatalf("JSON = %s, want exactly %s", g, want)
	}
}

func num(t testing.TB, o obj, key string) float64 {
	t.Helper()
	v, ok := o[key].(float64)
	if !ok {
		t.Fatalf("key %q missing or not a number in %v", key, o)
	}
	return v
}

// register registers an executor as an operator would.
func register(t testing.TB, db *pgtest.DB, id string, cadence, threshold int) {
	t.Helper()
	db.Exec(t, `SELECT fn_queue_heartbeat_register($1, 'external_worker', '{iu}', $2, $3, 'test')`, id, cadence, threshold)
}

// silence makes an executor's last beat `seconds` old: no sleeping, the clock is moved.
func silence(t testing.TB, db *pgtest.DB, id string, seconds int) {
	t.Helper()
	db.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now() - make_interval(secs => $2) WHERE executor_id = $1`, id, seconds)
}

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
