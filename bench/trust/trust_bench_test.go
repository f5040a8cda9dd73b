package trust

import (
	"context"
	"sort"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// usPer runs sql (a DO-free SELECT returning microseconds per operation) and returns it.
func usPer(b *testing.B, db *pgtest.DB, sql string) float64 {
	b.Helper()
	var us float64
	if err := db.Pool.QueryRow(context.Background(), sql).Scan(&us); err != nil {
		b.Fatalf("%s: %v", sql, err)
	}
	return us
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// interleave measures each named statement reps times, round-robin, and returns medians.
func interleave(b *testing.B, db *pgtest.DB, reps int, names []string, sqls map[string]string) map[string]float64 {
	b.Helper()
	got := map[string][]float64{}
	for r := 0; r < reps; r++ {
		for _, n := range names {
			got[n] = append(got[n], usPer(b, db, sqls[n]))
		}
	}
	out := map[string]float64{}
	for _, n := range names {
		out[n] = median(got[n])
	}
	return out
}

// loopCall returns a statement timing `calls` evaluations of expr, in microseconds per call.
func loopCall(expr string, calls int) string {
	return `SELECT fn_bench_loop($$` + expr + `$$, ` + itoa(calls) + `)`
}

func itoa(n int) string {
	s := ""
	if n == 0 {
		return "0"
	}
	for n > 0 {
		s = string(rune('0'+n%10)) + s
		n /= 10
	}
	return s
}

const loopFn = `
CREATE FUNCTION fn_bench_loop(p_expr text, p_calls int) RETURNS double precision LANGUAGE plpgsql AS $f$
DECLARE t0 timestamptz; i int; v boolean;
BEGIN
    EXECUTE 'PREPARE bench_stmt AS SELECT (' || p_expr || ') IS NOT NULL';
    t0 := clock_timestamp();
    FOR i IN 1 .. p_calls LOOP
        EXECUTE 'EXECUTE bench_stmt' INTO v;
    END LOOP;
    DEALLOCATE bench_stmt;
    RETURN extract(epoch FROM clock_timestamp() - t0) * 1e6 / p_calls;
END $f$;`

// What the former per-call writable-schema guard cost (the ACL check of public,
// iu_core.fn_iu_require_trusted_search_path with p_full false), which no package function
// calls any more: the SECURITY DEFINER functions pin search_path = pg_catalog, pg_temp
// instead, and only the install refuses a writable public. Its cost per call against an
// empty function with the same call shape (plpgsql, SET search_path), and against a whole
// gated fn_iu_route_worker_run, the "before" of that change.
func BenchmarkSearchPathGuardPerCall(b *testing.B) {
	db := pgtest.NewDB(b)
	db.Exec(b, loopFn)
	db.Exec(b, `CREATE FUNCTION fn_bench_empty(p text) RETURNS boolean LANGUAGE plpgsql STABLE
	            SET search_path = pg_catalog, pg_temp AS $$ BEGIN RETURN true; END $$`)
	db.Exec(b, `SELECT fn_iu_route_worker_register('w_bench')`)
	names := []string{"guard", "empty", "gated-run"}
	sqls := map[string]string{
		"guard":     loopCall(`iu_core.fn_iu_require_trusted_search_path('x')`, 2000),
		"empty":     loopCall(`fn_bench_empty('x')`, 2000),
		"gated-run": loopCall(`fn_iu_route_worker_run('w_bench')`, 500),
	}
	for b.Loop() {
		m := interleave(b, db, 7, names, sqls)
		b.ReportMetric(m["guard"], "guard-us/call")
		b.ReportMetric(m["empty"], "empty-fn-us/call")
		b.ReportMetric(m["gated-run"], "gated-run-us/call")
		b.ReportMetric(m["guard"]-m["empty"], "guard-extra-us/call")
		b.ReportMetric(m["guard"]/m["gated-run"], "guard/gated-run")
	}
}

// The producer's insert path: event_outbox as it is now (its row rules in its columns'
// domains: hygiene with case-insensitive, pg_catalog-qualified keys, txid = the inserting
// transaction, the reserved alert types; no partial alert index) against the shape it had
// before (case-sensitive hygiene, no txid CHECK, the partial alert index), and against no
// checks at all. 2,000-row INSERT ... SELECT with a small nested payload, per row.
func BenchmarkOutboxInsertPath(b *testing.B) {
	db := pgtest.NewDB(b)
	db.Exec(b, `CREATE FUNCTION fn_old_is_clean(p_payload jsonb) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
	    SELECT p_payload IS NULL OR NOT (p_payload @? '$.** ? (exists(@."body") || exists(@."content")
	        || exists(@."raw") || exists(@."vector") || exists(@."embedding") || exists(@."secret")
	        || exists(@."token") || exists(@."password") || exists(@."ssn") || exists(@."personal_data"))')
	$$`)
	for _, tbl := range []string{"bench_old", "bench_none"} {
		db.Exec(b, `CREATE TABLE `+tbl+` (LIKE event_outbox INCLUDING DEFAULTS)`)
		// The outbox's row rules are domains on its columns, and LIKE copies the column
		// types: the baselines take the domains' base types, so they carry no row rules.
		db.Exec(b, pgtest.StripDomainsSQL(tbl))
		db.Exec(b, `ALTER TABLE `+tbl+` ADD PRIMARY KEY (id)`)
		db.Exec(b, `CREATE INDEX ON `+tbl+` (event_domain, txid, id)`)
	}
	db.Exec(b, `ALTER TABLE bench_old ADD CHECK (jsonb_typeof(safe_payload) = 'object'), ADD CHECK (fn_old_is_clean(safe_payload))`)
	db.Exec(b, `CREATE INDEX ON bench_old (event_subject_ref, created_at) WHERE event_domain = 'system' AND event_type = 'queue_worker_silent'`)
	db.Exec(b, `CREATE FUNCTION fn_bench_insert(p_table text, p_rows int) RETURNS double precision LANGUAGE plpgsql AS $f$
	DECLARE t0 timestamptz;
	BEGIN
	    t0 := clock_timestamp();
	    EXECUTE format($q$INSERT INTO %I (event_domain, event_type, event_stream, safe_payload)
	                      SELECT 'iu', 'bench', 's', jsonb_build_object('n', g, 'kind', 'x', 'nested',
	                             jsonb_build_object('a', g, 'list', jsonb_build_array(1, 2, jsonb_build_object('b', 3))))
	                        FROM generate_series(1, %s) g$q$, p_table, p_rows);
	    RETURN extract(epoch FROM clock_timestamp() - t0) * 1e6 / p_rows;
	END $f$`)
	ins := func(tbl string) string { return `SELECT fn_bench_insert('` + tbl + `', 2000)` }
	names := []string{"now", "before", "none"}
	sqls := map[string]string{"now": ins("event_outbox"), "before": ins("bench_old"), "none": ins("bench_none")}
	for b.Loop() {
		m := interleave(b, db, 9, names, sqls)
		b.ReportMetric(m["now"], "now-us/row")
		b.ReportMetric(m["before"], "before-us/row")
		b.ReportMetric(m["none"], "no-checks-us/row")
		b.ReportMetric(m["now"]/m["before"], "now/before")
	}
}
