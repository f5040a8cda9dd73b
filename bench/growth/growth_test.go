package growthbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iu-core/event-worker/bench/benchdata"
	"github.com/iu-core/event-worker/internal/pgtest"
)

const (
	iuEvery   = 20 // 1 row in 20 is 'iu': 5 %
	workers   = 5
	executors = 1000
	fresh     = "growth_fresh" // registered, never run
)

func workerName(i int) string { return fmt.Sprintf("growth_w%d", i+1) }

// loaded is one database of the comparison and what loading it took.
type loaded struct {
	db       *pgtest.DB
	rows     int
	attempts int
	steps    []string // "what: duration"
}

// load builds one database: the outbox in one INSERT ... SELECT, routes and gates, the
// workers and executors registered, the workers caught up by running them, VACUUM ANALYZE.
func load(ctx context.Context, b *testing.B, rows int) *loaded {
	b.Helper()
	l := &loaded{db: pgtest.NewDB(b), rows: rows}
	step := func(what string, f func()) {
		t0 := time.Now()
		f()
		l.steps = append(l.steps, fmt.Sprintf("%s %s", what, time.Since(t0).Round(time.Millisecond)))
	}
	execSQL := func(what, sql string, args ...any) {
		if _, err := l.db.Pool.Exec(ctx, sql, args...); err != nil {
			b.Fatalf("%d rows: %s: %v", rows, what, err)
		}
	}
	step("outbox", func() { loadOutbox(ctx, b, l.db, rows) })
	step("setup", func() {
		execSQL("routes", benchdata.RoutesSQL)
		execSQL("opening the route gates", `UPDATE dot_config SET value = 'true' WHERE key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled')`)
		for i := range workers {
			execSQL("registering a worker", `SELECT fn_iu_route_worker_register($1)`, workerName(i))
		}
		execSQL("registering the fresh worker", `SELECT fn_iu_route_worker_register($1)`, fresh)
		// A cadence and threshold far longer than the bench, so every executor stays fresh
		// and the stale-check measures its steady state (no alert written).
		execSQL("registering executors", `
		SELECT fn_queue_heartbeat_register('growth_exec_' || g, 'external_worker', ARRAY['iu'], 3600, 7200)
		  FROM generate_series(1, $1::int) g`, executors)
		execSQL("vacuum analyze", `VACUUM ANALYZE`)
	})
	step(fmt.Sprintf("%d workers caught up", workers), func() { catchUp(ctx, b, l.db) })
	step("vacuum analyze", func() { execSQL("vacuum analyze", `VACUUM ANALYZE`) })
	l.db.QueryRow(b, `SELECT count(*) FROM iu_route_attempt`, nil, &l.attempts)
	var iu int
	l.db.QueryRow(b, `SELECT count(*) FROM event_outbox WHERE event_domain = 'iu'`, nil, &iu)
	if l.attempts < workers*iu {
		b.Fatalf("%d rows: %d attempts after catching up, want >= %d (%d workers x %d iu events)", rows, l.attempts, workers*iu, workers, iu)
	}
	return l
}

// loadChunk is the rows a loader inserts in one statement (and one transaction: the
// outbox gets a txid per chunk, as a live system has many).
const loadChunk = 500_000

// loadOutbox fills the outbox with INSERT ... SELECT generate_series, in chunks, two
// sessions at a time (the machine's two cores). Each session loads with
// session_replication_role = replica when it may (superuser), which skips ordinary
// triggers for the load only: the append-only guards (which only refuse UPDATE/DELETE)
// and the NOTIFY bridge's statement trigger, whose transition table would otherwise
// hold every row of the chunk; CHECKs, defaults and indexes apply as always.
func loadOutbox(ctx context.Context, b *testing.B, db *pgtest.DB, rows int) {
	b.Helper()
	starts := make(chan int)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			errs <- func() error {
				conn, err := db.Pool.Acquire(ctx)
				if err != nil {
					return err
				}
				defer conn.Release()
				replica := true
				if _, err := conn.Exec(ctx, `SET session_replication_role = replica`); err != nil {
					replica = false
				}
				if replica {
					defer conn.Exec(context.Background(), `RESET session_replication_role`)
				}
				for first := range starts {
					last := min(first+loadChunk-1, rows)
					if _, err := conn.Exec(ctx, `
					INSERT INTO event_outbox (event_domain, event_type, event_stream, event_subject_table, event_subject_ref)
					SELECT CASE WHEN g % $3 = 0 THEN 'iu' ELSE (ARRAY['system', 'ops', 'cut'])[1 + g % 3] END,
					       CASE WHEN g % $3 = 0 THEN (ARRAY['unit_version_created', 'unit_version_published', 'unit_archived', 'unit_flagged'])[1 + (g / $3) % 4]
					            ELSE 'noise_' || (g % 7) END,
					       CASE WHEN g % $3 = 0 THEN (ARRAY['main', 'side'])[1 + (g / ($3 * 4)) % 2] ELSE 'alert' END,
					       'unit', 'u-' || g
					  FROM generate_series($1::int, $2::int) g`, first, last, iuEvery); err != nil {
						return fmt.Errorf("loading outbox rows %d..%d: %w", first, last, err)
					}
				}
				return nil
			}()
		}()
	}
	var failed error
	go func() {
		defer close(starts)
		for first := 1; first <= rows; first += loadChunk {
			select {
			case starts <- first:
			case <-ctx.Done():
				return
			}
		}
	}()
	for range 2 {
		if err := <-errs; err != nil && failed == nil {
			failed = err
		}
	}
	if failed != nil {
		b.Fatal(failed)
	}
}

// catchUp runs every worker with batch 5000 until two runs in a row claim nothing, two
// workers at a time.
func catchUp(ctx context.Context, b *testing.B, db *pgtest.DB) {
	b.Helper()
	names := make(chan string, workers)
	for i := range workers {
		names <- workerName(i)
	}
	close(names)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			errs <- func() error {
				for w := range names {
					for empty := 0; empty < 2; {
						var claimed int
						if err := db.Pool.QueryRow(ctx, `SELECT (fn_iu_route_worker_run($1, 5000) ->> 'claimed')::int`, w).Scan(&claimed); err != nil {
							return fmt.Errorf("catching up %s: %w", w, err)
						}
						if claimed == 0 {
							empty++
						} else {
							empty = 0
						}
					}
				}
				return nil
			}()
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
}

// surface is one operator surface; time runs it once on a database.
type surface struct {
	name string
	sql  string                          // a query whose rows are read to the end, or
	cmd  func(*testing.B, *loaded) error // a process
}

func surfaces() []surface {
	return []surface{
		{name: "SELECT * FROM v_queue_health", sql: `SELECT * FROM v_queue_health`},
		{name: "fn_iu_route_worker_health(<caught-up worker>)", sql: `SELECT fn_iu_route_worker_health('` + workerName(0) + `')`},
		{name: "fn_iu_route_worker_health(<never-run worker>)", sql: `SELECT fn_iu_route_worker_health('` + fresh + `')`},
		{name: "SELECT * FROM v_iu_route_worker_status", sql: `SELECT * FROM v_iu_route_worker_status`},
		{name: "SELECT * FROM v_iu_route_dead_letter_open", sql: `SELECT * FROM v_iu_route_dead_letter_open`},
		{name: "SELECT * FROM v_iu_route_attempt_summary", sql: `SELECT * FROM v_iu_route_attempt_summary`},
		{name: fmt.Sprintf("fn_queue_stale_check() (%d executors)", executors), sql: `SELECT fn_queue_stale_check()`},
		{name: "iu-runner health (binary)", cmd: runnerHealth},
		{name: "iu-runner health --help (reference: process start)", cmd: runnerHelp},
		{name: "idle fn_iu_route_worker_run (reference)", sql: `SELECT fn_iu_route_worker_run('` + workerName(1) + `', 1000)`},
	}
}

// errTimedOut: the surface gave up on its own statement timeout (iu-runner health reads
// v_queue_health under the runner's call deadline). That is a figure, not a bench
// failure: the table marks it and the time until it gave up is recorded.
var errTimedOut = errors.New("statement timeout")

// runnerHealth runs `iu-runner health` against the database; exit 0 (all well) and 3
// (something stale or critical) are both answers, a statement timeout (SQLSTATE 57014)
// is errTimedOut, anything else is a failure.
func runnerHealth(b *testing.B, l *loaded) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, runnerBin.Path(b), "health", "--database-url", l.db.URL)
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "DATABASE_URL" && !strings.HasPrefix(k, "PG") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		return nil
	}
	if err != nil && strings.Contains(string(out), "57014") {
		return errTimedOut
	}
	if err != nil {
		return fmt.Errorf("iu-runner health: %v\n%s", err, out)
	}
	return nil
}

// runnerHelp runs `iu-runner health --help`: the process start the binary's figure
// includes, without a database.
func runnerHelp(b *testing.B, _ *loaded) error {
	if out, err := exec.Command(runnerBin.Path(b), "health", "--help").CombinedOutput(); err != nil {
		return fmt.Errorf("iu-runner health --help: %v\n%s", err, out)
	}
	return nil
}

// time runs the surface once on l; timedOut reports errTimedOut (the duration is then
// the time until the surface gave up).
func (s surface) time(ctx context.Context, b *testing.B, l *loaded) (d time.Duration, timedOut bool) {
	b.Helper()
	t0 := time.Now()
	if s.cmd != nil {
		err := s.cmd(b, l)
		if err != nil && !errors.Is(err, errTimedOut) {
			b.Fatal(err)
		}
		return time.Since(t0), err != nil
	}
	rows, err := l.db.Pool.Query(ctx, s.sql)
	if err != nil {
		b.Fatalf("%s: %v", s.name, err)
	}
	for rows.Next() {
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		b.Fatalf("%s: %v", s.name, err)
	}
	return time.Since(t0), false
}

func median(ds []time.Duration) time.Duration {
	d := slices.Clone(ds)
	slices.Sort(d)
	return d[len(d)/2]
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// BenchmarkSurfaceGrowth: each operator surface on the small and the large database,
// interleaved (surface by surface, the order of the two databases alternating each
// repetition), medians; the figure is large/small per surface (target <= 1.5).
func BenchmarkSurfaceGrowth(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	smallRows := pgtest.EnvInt(b, "BENCH_GROWTH_SMALL", 1_000_000, 10_000)
	largeRows := pgtest.EnvInt(b, "BENCH_GROWTH_LARGE", 10_000_000, 10_000)
	reps := pgtest.EnvInt(b, "BENCH_GROWTH_REPS", 3, 1)
	runnerBin.Path(b) // build before anything is timed

	began := time.Now()
	small := load(ctx, b, smallRows)
	fmt.Printf("growth: loaded %d rows: %s\n", smallRows, strings.Join(small.steps, ", "))
	large := load(ctx, b, largeRows)
	fmt.Printf("growth: loaded %d rows: %s\n", largeRows, strings.Join(large.steps, ", "))
	loadTime := time.Since(began)
	dbs := []*loaded{small, large}

	ss := surfaces()
	times := make([][2][]time.Duration, len(ss))
	timeouts := make([][2]int, len(ss))
	// One untimed pass: plans cached in the pool's sessions, hot pages read, on both sides.
	warm := time.Now()
	for _, s := range ss {
		for _, l := range dbs {
			s.time(ctx, b, l)
		}
	}
	fmt.Printf("growth: warm-up pass over every surface on both databases %s\n", time.Since(warm).Round(time.Millisecond))
	b.ResetTimer()
	for range b.N {
		for r := range reps {
			for i, s := range ss {
				for k := range dbs {
					j := (r + k) % 2
					d, timedOut := s.time(ctx, b, dbs[j])
					times[i][j] = append(times[i][j], d)
					if timedOut {
						timeouts[i][j]++
					}
				}
			}
		}
	}
	b.StopTimer()

	var tbl strings.Builder
	fmt.Fprintf(&tbl, "operator surfaces vs history: outbox %d rows (%d attempts) vs %d rows (%d attempts), 5%% iu, %d caught-up workers, %d executors; %d interleaved reps, medians; %d CPUs\n",
		smallRows, small.attempts, largeRows, large.attempts, workers, executors, reps, runtime.NumCPU())
	fmt.Fprintf(&tbl, "%-52s | %10s | %10s | %7s\n", "surface", "small ms", "large ms", "ratio")
	worst := 0.0
	for i, s := range ss {
		a, z := median(times[i][0]), median(times[i][1])
		ratio := float64(z) / float64(a)
		if !strings.Contains(s.name, "reference") && ratio > worst {
			worst = ratio
		}
		mark := [2]string{" ", " "}
		for j := range mark {
			if timeouts[i][j] > 0 {
				mark[j] = "T" // gave up on its statement timeout in at least one repetition
			}
		}
		fmt.Fprintf(&tbl, "%-52s | %9.2f%s | %9.2f%s | %7.2f\n", s.name, ms(a), mark[0], ms(z), mark[1], ratio)
		b.ReportMetric(ratio, fmt.Sprintf("ratio-%d", i+1))
	}
	b.ReportMetric(worst, "worst-ratio")
	fmt.Fprintf(&tbl, "ratio = large / small (target <= 1.50 for every surface; worst %.2f); T = gave up on its statement timeout (SQLSTATE 57014) in at least one repetition: the time is until it gave up, so the ratio is a lower bound\n", worst)
	fmt.Fprintf(&tbl, "load (total %s): small: %s; large: %s", loadTime.Round(time.Second),
		strings.Join(small.steps, ", "), strings.Join(large.steps, ", "))
	fmt.Println(tbl.String())
}
