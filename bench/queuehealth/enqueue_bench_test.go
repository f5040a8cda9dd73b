package queuehealth

import (
	"context"
	"os"
	"sort"
	"strconv"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// The single enqueue (issue 23): fn_job_enqueue called 20,000 times in one statement, as a
// trigger or an INSERT ... SELECT over orders calls it, against the same 20,000 rows written
// by one plain INSERT ... SELECT into job_queue (the same columns, every row rule still
// checked, no argument checks, no dedupe). Without a dedupe key, and with a distinct key a
// call (the keyed path: the horizon check and the ON CONFLICT insert) against a plain INSERT
// that writes the keys. The table is emptied before each measurement; the variants run
// interleaved, 7 repetitions, medians of the server-side time (clock_timestamp around the
// statement). ratio = plain time per row / enqueue time per call (1 = as fast as a plain
// row; the issue asks >= 0.3).
//
//	IU_BENCH_ENQUEUE_ROWS  rows per statement (default 20000)
//	IU_BENCH_ENQUEUE_REPS  repetitions (default 7)
func BenchmarkSingleEnqueue20k(b *testing.B) {
	rows := envInt("IU_BENCH_ENQUEUE_ROWS", 20000)
	reps := envInt("IU_BENCH_ENQUEUE_REPS", 7)
	db := pgtest.NewDB(b)
	db.Exec(b, `CREATE FUNCTION fn_bench_time(p_sql text, p_rows int) RETURNS double precision LANGUAGE plpgsql AS $f$
	DECLARE t0 timestamptz;
	BEGIN
	    TRUNCATE job_queue;
	    t0 := clock_timestamp();
	    EXECUTE p_sql;
	    RETURN extract(epoch FROM clock_timestamp() - t0) * 1e6 / p_rows;
	END $f$`)
	n := strconv.Itoa(rows)
	sqls := map[string]string{
		"enqueue": `SELECT count(fn_job_enqueue('bench', 'iu', jsonb_build_object('n', g))) FROM generate_series(1, ` + n + `) g`,
		"plain": `INSERT INTO job_queue (job_kind, event_domain, payload)
		          SELECT 'bench', 'iu', jsonb_build_object('n', g) FROM generate_series(1, ` + n + `) g`,
		"enqueue-keyed": `SELECT count(fn_job_enqueue('bench', 'iu', jsonb_build_object('n', g), NULL, 'key-' || g)) FROM generate_series(1, ` + n + `) g`,
		"plain-keyed": `INSERT INTO job_queue (job_kind, event_domain, payload, dedupe_key)
		          SELECT 'bench', 'iu', jsonb_build_object('n', g), 'key-' || g FROM generate_series(1, ` + n + `) g`,
	}
	names := []string{"enqueue", "plain", "enqueue-keyed", "plain-keyed"}
	for b.Loop() {
		got := map[string][]float64{}
		for r := 0; r < reps; r++ {
			for _, name := range names {
				var us float64
				if err := db.Pool.QueryRow(context.Background(), `SELECT fn_bench_time($1, $2)`, sqls[name], rows).Scan(&us); err != nil {
					b.Fatalf("%s: %v", name, err)
				}
				got[name] = append(got[name], us)
			}
		}
		m := map[string]float64{}
		for _, name := range names {
			s := append([]float64(nil), got[name]...)
			sort.Float64s(s)
			m[name] = s[len(s)/2]
		}
		b.ReportMetric(m["enqueue"], "enqueue-us/call")
		b.ReportMetric(m["plain"], "plain-us/row")
		b.ReportMetric(m["plain"]/m["enqueue"], "plain/enqueue")
		b.ReportMetric(m["enqueue-keyed"], "keyed-enqueue-us/call")
		b.ReportMetric(m["plain-keyed"], "keyed-plain-us/row")
		b.ReportMetric(m["plain-keyed"]/m["enqueue-keyed"], "keyed-plain/enqueue")
	}
}

// envInt reads a positive integer from the environment, or returns def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
