package routeworker

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// querier is what a pool, a dedicated connection and an open transaction have in common,
// so helpers run on whichever session a test needs.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// testBundle is what setup prepares besides the database.
type testBundle struct {
	worker string
}

// The event types and routes every test gets (all in the iu domain, stream "s"):
//
//	iu/dry  -> route r_dry  enabled, dry_run    -> "dry_run"
//	iu/off  -> route r_off  disabled            -> "disabled"
//	iu/live -> route r_live enabled, !dry_run   -> "failed" (the seam fails closed) + dead letter
//	iu/none -> no route                         -> "skipped"
const (
	typDry  = "dry"
	typOff  = "off"
	typLive = "live"
	typNone = "none"
)

// setup gives a test its own migrated database with both gates open, the routes above and
// the worker "w" registered at the start of the stream.
func setup(t *testing.T) (*pgtest.DB, *testBundle) {
	t.Helper()
	return setupOn(t, pgtest.NewDB(t))
}

// setupOn is setup on a given (migrated) database, e.g. one of another major's cluster.
func setupOn(t *testing.T, db *pgtest.DB) (*pgtest.DB, *testBundle) {
	t.Helper()
	db.Exec(t, `
		INSERT INTO event_type_registry (event_domain, event_type)
		VALUES ('iu', 'dry'), ('iu', 'off'), ('iu', 'live'), ('iu', 'none'), ('sys', 'x');
		INSERT INTO iu_outbound_route (event_domain, event_type, event_stream, route_key, enabled, dry_run) VALUES
			('iu', 'dry',  's', 'r_dry',  true,  true),
			('iu', 'off',  's', 'r_off',  false, true),
			('iu', 'live', 's', 'r_live', true,  false);
		UPDATE dot_config SET value = 'true'
		 WHERE key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled');`)
	db.Exec(t, `SELECT fn_iu_route_worker_register('w')`)
	return db, &testBundle{worker: "w"}
}

// emit inserts n committed-or-not (depending on q) events of one type and returns their ids.
func emit(t testing.TB, q querier, domain, typ string, n int) []string {
	t.Helper()
	var ids []string
	if err := q.QueryRow(pgtest.Ctx(t), `
		WITH ins AS (
			INSERT INTO event_outbox (event_domain, event_type, event_stream)
			SELECT $1, $2, 's' FROM generate_series(1, $3::int)
			RETURNING id)
		SELECT coalesce(array_agg(id::text), '{}') FROM ins`, domain, typ, n).Scan(&ids); err != nil {
		t.Fatalf("emit %s/%s x%d: %v", domain, typ, n, err)
	}
	return ids
}

// emit1 inserts one iu event of a type and returns its id.
func emit1(t testing.TB, q querier, typ string) string {
	t.Helper()
	return emit(t, q, "iu", typ, 1)[0]
}

// run calls fn_iu_route_worker_run and returns its summary.
func run(t testing.TB, q querier, worker string, limit int) map[string]any {
	t.Helper()
	m, err := runErr(t, q, worker, limit)
	if err != nil {
		t.Fatalf("fn_iu_route_worker_run(%s, %d): %v", worker, limit, err)
	}
	return m
}

func runErr(t testing.TB, q querier, worker string, limit int) (map[string]any, error) {
	t.Helper()
	var m map[string]any
	err := q.QueryRow(pgtest.Ctx(t), `SELECT fn_iu_route_worker_run($1, $2)`, worker, limit).Scan(&m)
	return m, err
}

// runUntilCaughtUp runs the worker until a run reports caught_up, and returns the summed
// counts of all runs (plus fallback_runs: runs whose page statement failed and was redone
// event by event).
func runUntilCaughtUp(t testing.TB, q querier, worker string, limit int) map[string]int {
	t.Helper()
	sum := map[string]int{}
	for i := 0; i < 1000; i++ {
		m := run(t, q, worker, limit)
		for _, k := range []string{"claimed", "attempts_written", "dead_lettered", "dry_run", "disabled", "skipped", "failed", "sent", "already_attempted"} {
			sum[k] += num(t, m, k)
		}
		if m["fallback"] == true {
			sum["fallback_runs"]++
		}
		if m["caught_up"] == true {
			return sum
		}
	}
	t.Fatalf("worker %s never caught up", worker)
	return nil
}

// num reads an integer key of a summary.
func num(t testing.TB, m map[string]any, key string) int {
	t.Helper()
	v, ok := m[key]
	if !ok {
		t.Fatalf("summary has no key %q: %v", key, m)
	}
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("summary key %q is %T, not a number: %v", key, v, m)
	}
	return int(f)
}

// requireCounts checks several integer keys of a summary at once.
func requireCounts(t testing.TB, m map[string]any, want map[string]int) {
	t.Helper()
	var bad []string
	for k, w := range want {
		if got := num(t, m, k); got != w {
			bad = append(bad, fmt.Sprintf("%s=%d (want %d)", k, got, w))
		}
	}
	if len(bad) > 0 {
		t.Fatalf("summary counts: %s\nsummary: %v", strings.Join(bad, ", "), m)
	}
}

// requireExactlyOnce fails unless every iu event has exactly one attempt of the worker
// (attempt_no 1), and no attempt of the worker points at an event that does not exist.
func requireExactlyOnce(t testing.TB, db *pgtest.DB, worker string) int {
	t.Helper()
	var events, bad, orphans int
	var sample []string
	db.QueryRow(t, `
		SELECT count(*),
		       count(*) FILTER (WHERE n <> 1),
		       coalesce((array_agg(id::text || ' x' || n) FILTER (WHERE n <> 1))[1:5], '{}')
		  FROM (SELECT e.id, (SELECT count(*) FROM iu_route_attempt a
		                       WHERE a.event_ref = e.id AND a.worker_name = $1 AND a.attempt_no = 1) AS n
		          FROM event_outbox e WHERE e.event_domain = 'iu') x`, []any{worker}, &events, &bad, &sample)
	db.QueryRow(t, `
		SELECT count(*) FROM iu_route_attempt a
		 WHERE a.worker_name = $1 AND NOT EXISTS (SELECT 1 FROM event_outbox e WHERE e.id = a.event_ref)`,
		[]any{worker}, &orphans)
	if bad > 0 || orphans > 0 {
		t.Fatalf("worker %s: %d of %d iu events do not have exactly one attempt (e.g. %v); %d attempts for events that do not exist",
			worker, bad, events, sample, orphans)
	}
	return events
}

// cursorRow returns the whole cursor row as JSON text, to compare before and after.
func cursorRow(t testing.TB, db *pgtest.DB, worker string) string {
	t.Helper()
	var s string
	db.QueryRow(t, `SELECT to_jsonb(c)::text FROM iu_route_worker_cursor c WHERE c.worker_name = $1`, []any{worker}, &s)
	return s
}

// scalar reads one integer.
func scalar(t testing.TB, db *pgtest.DB, sql string, args ...any) int {
	t.Helper()
	var n int
	db.QueryRow(t, sql, args, &n)
	return n
}

// backendPID returns the server pid of a dedicated connection.
func backendPID(t testing.TB, q querier) int {
	t.Helper()
	var pid int
	if err := q.QueryRow(pgtest.Ctx(t), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// heldPIDs lists the pids named in a held_open_by array (run summary or health).
func heldPIDs(t testing.TB, m map[string]any) []int {
	t.Helper()
	arr, ok := m["held_open_by"].([]any)
	if !ok {
		t.Fatalf("no held_open_by array in %v", m)
	}
	var pids []int
	for _, h := range arr {
		if o, ok := h.(map[string]any); ok {
			if p, ok := o["pid"].(float64); ok {
				pids = append(pids, int(p))
			}
		}
	}
	return pids
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
