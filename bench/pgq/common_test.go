package pgqbench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/bench/benchdata"
	"github.com/iu-core/event-worker/internal/pgtest"
)

const (
	defaultRows = 1_000_000
	iuEvery     = 20   // 1 row in 20 is 'iu': 5 %
	loadTxRows  = 1000 // generated rows per loading transaction
	pgqPackage  = "postgresql-15-pgq3"
)

// requirePgq skips b unless the server can install the pgq extension, and installs it
// into db otherwise.
func requirePgq(ctx context.Context, b *testing.B, db *pgtest.DB) {
	b.Helper()
	var available bool
	if err := db.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pgq')`).Scan(&available); err != nil {
		b.Fatal(err)
	}
	skip := func(msg string) {
		b.Helper()
		fmt.Println(b.Name() + ": SKIP: " + msg) // b.Skip's message shows only under -v
		b.Skip(msg)
	}
	if !available {
		skip(fmt.Sprintf("PgQ is not installable on the test server (no pgq in pg_available_extensions): "+
			"install Debian's %s (apt-get install %s) and run again", pgqPackage, pgqPackage))
	}
	if _, err := db.Pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pgq`); err != nil {
		skip(fmt.Sprintf("CREATE EXTENSION pgq failed (the bench role needs to be allowed to install it): %v", err))
	}
}

// loadOutbox fills the outbox from generate_series, loadTxRows rows per transaction: 5 % 'iu' spread
// over four types and two streams, the rest 'system'/'ops'/'cut' noise (or, iuOnly, only
// the iu rows of the same series), the bench routes (dry_run, one disabled, one stream
// unrouted: the common path), the route gates opened, the producer bench's event type
// registered; then VACUUM ANALYZE. The same generator as bench/routeworker.
func loadOutbox(ctx context.Context, b *testing.B, db *pgtest.DB, rows int, iuOnly bool) {
	b.Helper()
	where := ""
	if iuOnly {
		where = fmt.Sprintf("WHERE g %% %d = 0", iuEvery)
	}
	// One transaction per loadTxRows generated rows, as producers write: a consumer reads
	// by (txid, id), so a log written in one giant transaction would be read in random id
	// order, one heap page per event, which no producer workload looks like.
	load := fmt.Sprintf(`
		DO $load$
		BEGIN
		    FOR c IN 0 .. (%[1]d - 1) / %[3]d LOOP
		        INSERT INTO event_outbox (event_domain, event_type, event_stream, event_subject_table, event_subject_ref)
		        SELECT CASE WHEN g %% %[2]d = 0 THEN 'iu' ELSE (ARRAY['system', 'ops', 'cut'])[1 + g %% 3] END,
		               CASE WHEN g %% %[2]d = 0 THEN (ARRAY['unit_version_created', 'unit_version_published', 'unit_archived', 'unit_flagged'])[1 + (g / %[2]d) %% 4]
		                    ELSE 'noise_' || (g %% 7) END,
		               CASE WHEN g %% %[2]d = 0 THEN (ARRAY['main', 'side'])[1 + (g / (%[2]d * 4)) %% 2] ELSE 'alert' END,
		               'unit', 'u-' || g
		          FROM generate_series(c * %[3]d + 1, least((c + 1) * %[3]d, %[1]d)) g %[4]s;
		        COMMIT;
		    END LOOP;
		END
		$load$`, rows, iuEvery, loadTxRows, where)
	steps := []struct {
		what, sql string
		args      []any
	}{
		{"loading the outbox", load, nil},
		{"routes", benchdata.RoutesSQL, nil},
		{"opening the route gates", `UPDATE dot_config SET value = 'true' WHERE key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled')`, nil},
		{"registering the producer event type", `INSERT INTO event_type_registry (event_domain, event_type, description)
		  VALUES ('iu', 'unit_version_created', 'bench') ON CONFLICT DO NOTHING`, nil},
		{"vacuum analyze", `VACUUM ANALYZE`, nil},
	}
	for _, s := range steps {
		if _, err := db.Pool.Exec(ctx, s.sql, s.args...); err != nil {
			b.Fatalf("%s: %v", s.what, err)
		}
	}
}

// cloneDB copies a loaded database into a fresh one for one measurement (dropped when b
// ends) and returns a connection to it.
func cloneDB(ctx context.Context, b *testing.B, h *pgtest.Harness, src, name string) *pgx.Conn {
	b.Helper()
	admin, err := pgx.Connect(ctx, h.Server.AdminURL)
	if err != nil {
		b.Fatal(err)
	}
	defer admin.Close(ctx)
	stmt := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize() + " TEMPLATE " + pgx.Identifier{src}.Sanitize()
	if _, err := admin.Exec(ctx, stmt+" STRATEGY FILE_COPY"); err != nil {
		if _, err := admin.Exec(ctx, stmt); err != nil {
			b.Fatalf("cloning %s: %v", src, err)
		}
	}
	b.Cleanup(func() {
		if err := h.DropDB(context.Background(), name); err != nil {
			b.Logf("dropping %s: %v", name, err)
		}
	})
	return connect(ctx, b, h.Server.DBURL(name))
}

// connect opens a session closed when b ends.
func connect(ctx context.Context, b *testing.B, url string) *pgx.Conn {
	b.Helper()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// exec runs one statement and fails b with what was being done.
func exec(ctx context.Context, b *testing.B, conn *pgx.Conn, what, sql string, args ...any) {
	b.Helper()
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		b.Fatalf("%s: %v", what, err)
	}
}

// runResult is the part of fn_iu_route_worker_run's answer the benches check.
type runResult struct {
	Claimed       int  `json:"claimed"`
	Gated         bool `json:"gated"`
	Busy          bool `json:"busy"`
	HeldOpenCount int  `json:"held_open_count"`
}

// workerRun calls fn_iu_route_worker_run once and decodes its answer.
func workerRun(ctx context.Context, b *testing.B, conn *pgx.Conn, worker string, batch int) runResult {
	b.Helper()
	return decodeRun(b, workerCall(ctx, b, conn, worker, batch))
}

// workerCall is the database call alone: fn_iu_route_worker_run, its answer brought back
// as raw bytes. The per-call idle timing stops here, so it measures the call and the
// transfer of its answer, not the bench's own JSON decoding (PgQ's side scans an integer).
func workerCall(ctx context.Context, b *testing.B, conn *pgx.Conn, worker string, batch int) []byte {
	b.Helper()
	var raw []byte
	if err := conn.QueryRow(ctx, `SELECT fn_iu_route_worker_run($1, $2)`, worker, batch).Scan(&raw); err != nil {
		b.Fatalf("fn_iu_route_worker_run(%s, %d): %v", worker, batch, err)
	}
	return raw
}

// decodeRun decodes a run's answer and fails b on a gated or busy run.
func decodeRun(b *testing.B, raw []byte) runResult {
	b.Helper()
	var r runResult
	if err := json.Unmarshal(raw, &r); err != nil {
		b.Fatalf("decoding %s: %v", raw, err)
	}
	if r.Gated || r.Busy {
		b.Fatalf("worker run gated or busy: %s", raw)
	}
	return r
}

// catchUp runs the worker with large batches until two runs in a row claim nothing.
func catchUp(ctx context.Context, b *testing.B, conn *pgx.Conn, worker string) (events int) {
	b.Helper()
	for empty := 0; empty < 2; {
		n := workerRun(ctx, b, conn, worker, 5000).Claimed
		events += n
		if n == 0 {
			empty++
		} else {
			empty = 0
		}
	}
	return events
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	d := slices.Clone(ds)
	slices.Sort(d)
	return d[len(d)/2]
}

func medianF(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	x := slices.Clone(xs)
	slices.Sort(x)
	return x[len(x)/2]
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// pgqSetup is the bench's PgQ consumer: a copy of an attempt partition (same columns,
// defaults, CHECKs and unique keys, no triggers) and one function that does a consumer's
// whole turn in one call and one transaction, like fn_iu_route_worker_run: next_batch,
// the same per-event audit row (route looked up in iu_outbound_route, idempotency key
// unique, in the worker's format iu_wrk:{consumer}:{route}:{event}, the consumer named
// with the worker's length: rows of the same size on both sides), finish_batch. It returns
// the number of events in the batch, or -1 when next_batch had none.
//
// The audit rows are written with a plain INSERT: a PgQ consumer that writes them in the
// batch's own transaction needs no ON CONFLICT (the batch and its rows commit together, and
// a batch is never handed out again once finished), which is the baseline the worker is
// held to. p_on_conflict writes them with ON CONFLICT DO NOTHING instead, as a consumer that
// cannot trust that would (the bench's second line: the worker's own hot path is a plain
// INSERT with a conflict fallback). Each consumer writes its own table.
const pgqSetup = `
CREATE TABLE bench_pgq_attempt (LIKE iu_route_attempt INCLUDING ALL);
-- Every partition of iu_route_attempt has its own PRIMARY KEY (id) (a partitioned parent
-- cannot carry it without the partition key), which LIKE does not copy: the same indexes
-- on both sides.
ALTER TABLE bench_pgq_attempt ADD PRIMARY KEY (id);
CREATE TABLE bench_pgq_attempt_oc (LIKE bench_pgq_attempt INCLUDING ALL);
CREATE FUNCTION bench_pgq_consume(p_queue text, p_consumer text, p_on_conflict boolean DEFAULT false)
RETURNS integer
LANGUAGE plpgsql
AS $$
DECLARE
    v_batch bigint;
    v_n     integer;
BEGIN
    v_batch := pgq.next_batch(p_queue, p_consumer);
    IF v_batch IS NULL THEN
        RETURN -1;
    END IF;
    IF p_on_conflict THEN
        INSERT INTO bench_pgq_attempt_oc (event_ref, event_txid, worker_name, route_key, route_kind, status, idempotency_key)
        SELECT e.ev_extra2::uuid, e.ev_txid::text::xid8, p_consumer, rt.route_key, rt.route_kind,
               CASE WHEN rt.id IS NULL THEN 'skipped' WHEN NOT rt.enabled THEN 'disabled' ELSE 'dry_run' END,
               'iu_wrk:' || p_consumer || ':' || coalesce(rt.route_key, 'none') || ':' || e.ev_extra2
          FROM pgq.get_batch_events(v_batch) e
          LEFT JOIN iu_outbound_route rt
                 ON rt.event_domain = 'iu' AND rt.event_type = e.ev_type AND rt.event_stream = e.ev_extra1
        ON CONFLICT DO NOTHING;
    ELSE
        INSERT INTO bench_pgq_attempt (event_ref, event_txid, worker_name, route_key, route_kind, status, idempotency_key)
        SELECT e.ev_extra2::uuid, e.ev_txid::text::xid8, p_consumer, rt.route_key, rt.route_kind,
               CASE WHEN rt.id IS NULL THEN 'skipped' WHEN NOT rt.enabled THEN 'disabled' ELSE 'dry_run' END,
               'iu_wrk:' || p_consumer || ':' || coalesce(rt.route_key, 'none') || ':' || e.ev_extra2
          FROM pgq.get_batch_events(v_batch) e
          LEFT JOIN iu_outbound_route rt
                 ON rt.event_domain = 'iu' AND rt.event_type = e.ev_type AND rt.event_stream = e.ev_extra1;
    END IF;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    PERFORM pgq.finish_batch(v_batch);
    RETURN v_n;
END;
$$;`

// pgqQueue creates a queue that ticks on every pgq.ticker call that has at least one new
// event, and registers one consumer on it.
func pgqQueue(ctx context.Context, b *testing.B, conn *pgx.Conn, queue, consumer string) {
	b.Helper()
	exec(ctx, b, conn, "pgq.create_queue", `SELECT pgq.create_queue($1)`, queue)
	exec(ctx, b, conn, "pgq.set_queue_config", `SELECT pgq.set_queue_config($1, 'ticker_max_count', '1')`, queue)
	exec(ctx, b, conn, "pgq.register_consumer", `SELECT pgq.register_consumer($1, $2)`, queue, consumer)
}

// pgqLoadBatches copies the iu events of the outbox, in claim order from the skip-th on,
// into the queue as `runs` chunks of `batch` events, one transaction each, with a tick
// after each, so every pgq.next_batch gets exactly one chunk (the same events, in the same
// order, as the worker claims).
func pgqLoadBatches(ctx context.Context, b *testing.B, conn *pgx.Conn, queue string, skip, batch, runs int) {
	b.Helper()
	for i := range runs {
		exec(ctx, b, conn, "filling the PgQ queue", `
			SELECT pgq.insert_event($1, o.event_type, o.safe_payload::text, o.event_stream, o.id::text, o.event_subject_ref, NULL)
			  FROM (SELECT * FROM event_outbox WHERE event_domain = 'iu' ORDER BY txid, id OFFSET $2 LIMIT $3) o`,
			queue, skip+i*batch, batch)
		if tick := pgqTicker(ctx, b, conn, queue); tick == nil {
			b.Fatalf("pgq.ticker after chunk %d wrote no tick", i)
		}
	}
	exec(ctx, b, conn, "analyze", `ANALYZE`)
}

// pgqTicker is one pgq.ticker(queue) call, in a transaction of its own (the session's
// autocommit), as pgqd makes it: the tick it wrote, or nil when it wrote none.
func pgqTicker(ctx context.Context, b *testing.B, conn *pgx.Conn, queue string) *int64 {
	b.Helper()
	var tick *int64
	if err := conn.QueryRow(ctx, `SELECT pgq.ticker($1)`, queue).Scan(&tick); err != nil {
		b.Fatalf("pgq.ticker(%s): %v", queue, err)
	}
	return tick
}

func fmtRatio(x float64) string { return fmt.Sprintf("%.2f", x) }
