package river

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Tunables (environment): IU_BENCH_RIVER_JOBS jobs per run (default 50,000),
// IU_BENCH_RIVER_REPS repetitions (default 3), IU_BENCH_RIVER_FINISHED finished rows in the
// "full" tables (default 1,000,000), IU_BENCH_OURS_CLAIMERS our claiming sessions (default 4).
type params struct {
	jobs, reps, finished, claimers int
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

const (
	batch      = 1000 // enqueue batch, both systems
	claimBatch = 100  // our claim batch; River fetches up to MaxWorkers (100) at a time
	poolConns  = 24   // connections per pool, both systems
)

// queue is one system under test, on its own database of the shared cluster.
type queue interface {
	enqueue(ctx context.Context, n int) error
	work(ctx context.Context, n int) error
	claimOnce(ctx context.Context, claimer int) (int, error)
	reset(ctx context.Context) error
	fill(ctx context.Context, finished int) error
}

// ---- ours -------------------------------------------------------------------------------

type ours struct {
	pool     *pgxpool.Pool
	claimers int
	payload  string
}

func newOurs(b *testing.B, claimers int) *ours {
	db := pgtest.NewDB(b)
	return &ours{pool: openPool(b, db.URL), claimers: claimers,
		payload: "[" + strings.TrimSuffix(strings.Repeat("{},", batch), ",") + "]"}
}

func (o *ours) enqueue(ctx context.Context, n int) error {
	for done := 0; done < n; done += batch {
		if _, err := o.pool.Exec(ctx, `SELECT fn_job_enqueue_many('noop', 'bench', $1::jsonb)`, o.payload); err != nil {
			return fmt.Errorf("fn_job_enqueue_many: %w", err)
		}
	}
	return nil
}

// work runs the worker loop an executor in any language would: claim a batch, do the
// (no-op) work, complete the batch; each claimer on its own session, until the claims come
// back empty.
func (o *ours) work(ctx context.Context, n int) error {
	var done atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, o.claimers)
	for c := range o.claimers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := fmt.Sprintf("bench-%d", c)
			for {
				var ids, tokens []string
				if err := o.pool.QueryRow(ctx, `SELECT coalesce(array_agg(job_id::text), '{}'), coalesce(array_agg(lease_token::text), '{}')
				                                  FROM fn_job_claim($1, '{noop}', $2, 60)`, worker, claimBatch).Scan(&ids, &tokens); err != nil {
					errs <- fmt.Errorf("fn_job_claim: %w", err)
					return
				}
				if len(ids) == 0 {
					return
				}
				var completed int64
				if err := o.pool.QueryRow(ctx, `SELECT (fn_job_complete_many($1, $2::uuid[], $3::uuid[]) ->> 'completed')::bigint`,
					worker, ids, tokens).Scan(&completed); err != nil {
					errs <- fmt.Errorf("fn_job_complete_many: %w", err)
					return
				}
				done.Add(completed)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	if got := done.Load(); got != int64(n) {
		return fmt.Errorf("ours completed %d of %d jobs", got, n)
	}
	return nil
}

func (o *ours) claimOnce(ctx context.Context, claimer int) (int, error) {
	rows, err := o.pool.Query(ctx, `SELECT job_id, lease_token FROM fn_job_claim($1, '{noop}', $2, 3600)`,
		fmt.Sprintf("lat-%d", claimer), claimBatch)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	return n, rows.Err()
}

func (o *ours) reset(ctx context.Context) error {
	return execAll(ctx, o.pool, `DELETE FROM job_queue WHERE event_domain = 'bench'`, `VACUUM ANALYZE job_queue`)
}

func (o *ours) fill(ctx context.Context, finished int) error {
	return execAll(ctx, o.pool, fmt.Sprintf(`INSERT INTO job_queue (job_kind, event_domain, status, attempt, lease_token, enqueued_at, process_after, finished_at)
	        SELECT 'noop', 'filler', 'succeeded', 1, gen_random_uuid(), now(), now(), now() FROM generate_series(1, %d)`, finished),
		`VACUUM ANALYZE job_queue`)
}

// ---- River ------------------------------------------------------------------------------

type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	worked *atomic.Int64
}

func (w noopWorker) Work(context.Context, *river.Job[noopArgs]) error {
	w.worked.Add(1)
	return nil
}

type riverQ struct {
	pool    *pgxpool.Pool
	workers *river.Workers
	worked  *atomic.Int64
	params  []river.InsertManyParams
	fast    bool // InsertManyFast (COPY) instead of InsertMany
}

func newRiver(b *testing.B) *riverQ {
	db := pgtest.NewEmptyDB(b)
	pool := openPool(b, db.URL)
	m, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := m.Migrate(context.Background(), rivermigrate.DirectionUp, nil); err != nil {
		b.Fatalf("river migrations: %v", err)
	}
	w, worked := river.NewWorkers(), &atomic.Int64{}
	river.AddWorker(w, &noopWorker{worked: worked})
	p := make([]river.InsertManyParams, batch)
	for i := range p {
		p[i] = river.InsertManyParams{Args: noopArgs{}}
	}
	return &riverQ{pool: pool, workers: w, worked: worked, params: p}
}

// client is configured as in the measurement: 100 workers, 1 ms fetch cooldown.
func (r *riverQ) client() (*river.Client[pgx.Tx], error) {
	return river.NewClient(riverpgxv5.New(r.pool), &river.Config{
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 100}},
		FetchCooldown: time.Millisecond,
		Workers:       r.workers,
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
}

func (r *riverQ) enqueue(ctx context.Context, n int) error {
	c, err := r.client()
	if err != nil {
		return err
	}
	for done := 0; done < n; done += batch {
		if r.fast {
			_, err = c.InsertManyFast(ctx, r.params)
		} else {
			_, err = c.InsertMany(ctx, r.params)
		}
		if err != nil {
			return fmt.Errorf("river InsertMany: %w", err)
		}
	}
	return nil
}

// work starts a client and waits until its workers ran n jobs and River's batch
// completer has written all of them as completed (no noop job left available or running).
func (r *riverQ) work(ctx context.Context, n int) error {
	c, err := r.client()
	if err != nil {
		return err
	}
	r.worked.Store(0)
	if err := c.Start(ctx); err != nil {
		return err
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), time.Minute)
		defer scancel()
		_ = c.Stop(sctx)
	}()
	deadline := time.Now().Add(10 * time.Minute)
	for r.worked.Load() < int64(n) {
		if time.Now().After(deadline) {
			return fmt.Errorf("river worked %d of %d jobs in 10 minutes", r.worked.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
	for {
		var open int
		if err := r.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state IN ('available', 'running') AND queue = 'default' AND kind = 'noop'`).Scan(&open); err != nil {
			return err
		}
		if open == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("river: %d jobs not completed in 10 minutes", open)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (r *riverQ) claimOnce(ctx context.Context, claimer int) (int, error) {
	res, err := riverpgxv5.New(r.pool).GetExecutor().JobGetAvailable(ctx, &riverdriver.JobGetAvailableParams{
		ClientID: fmt.Sprintf("lat-%d", claimer), MaxAttemptedBy: 100, MaxToLock: claimBatch, Queue: river.QueueDefault,
	})
	if err != nil {
		return 0, err
	}
	return len(res.Jobs), nil
}

func (r *riverQ) reset(ctx context.Context) error {
	return execAll(ctx, r.pool, `DELETE FROM river_job WHERE kind = 'noop'`, `VACUUM ANALYZE river_job`)
}

func (r *riverQ) fill(ctx context.Context, finished int) error {
	return execAll(ctx, r.pool, fmt.Sprintf(`INSERT INTO river_job (args, kind, max_attempts, queue, state, attempt, attempted_at, finalized_at, scheduled_at, priority)
	        SELECT '{}', 'filler', 25, 'default', 'completed', 1, now(), now(), now(), 1 FROM generate_series(1, %d)`, finished),
		`VACUUM ANALYZE river_job`)
}

// ---- harness ----------------------------------------------------------------------------

func openPool(b *testing.B, url string) *pgxpool.Pool {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = poolConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return pool
}

func execAll(ctx context.Context, pool *pgxpool.Pool, stmts ...string) error {
	for _, s := range stmts {
		if _, err := pool.Exec(ctx, s); err != nil {
			return fmt.Errorf("%.60s: %w", s, err)
		}
	}
	return nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func percentile(ds []time.Duration, p float64) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	i := min(len(s)-1, int(p*float64(len(s))))
	return float64(s[i].Microseconds()) / 1000
}

// riverVersion is the River version this module requires (read from go.mod: test
// binaries do not always carry their dependencies' versions).
func riverVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/riverqueue/river" && d.Version != "" {
				return d.Version
			}
		}
	}
	if mod, err := os.ReadFile("go.mod"); err == nil {
		for _, line := range strings.Split(string(mod), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/riverqueue/river" {
				return f[1]
			}
		}
	}
	return "(unknown version)"
}

// rate runs f and returns n / seconds.
func rate(b *testing.B, n int, f func() error) float64 {
	b.Helper()
	began := time.Now()
	if err := f(); err != nil {
		b.Fatal(err)
	}
	return float64(n) / time.Since(began).Seconds()
}

// BenchmarkRiverComparison: ours (fn_job_enqueue_many; claim 100 + fn_job_complete_many on
// IU_BENCH_OURS_CLAIMERS sessions) against River (InsertMany, and InsertManyFast's COPY;
// a client with 100 workers and a 1 ms fetch cooldown), no-op jobs, on one cluster: jobs
// enqueued per second and jobs worked per second, on empty tables and on tables holding
// 1,000,000 finished jobs. Repetitions interleave the systems (the order alternates) and
// the figures are medians; between runs each system's run jobs are deleted and its table
// vacuumed the same way. Then claim latency at 1, 4 and 16 concurrent claimers (100 per
// claim): our fn_job_claim against River's own fetch statement
// (its driver's JobGetAvailable), p50 and p99, in rounds that alternate the systems.
func BenchmarkRiverComparison(b *testing.B) {
	p := params{
		jobs:     envInt("IU_BENCH_RIVER_JOBS", 50000),
		reps:     envInt("IU_BENCH_RIVER_REPS", 3),
		finished: envInt("IU_BENCH_RIVER_FINISHED", 1000000),
		claimers: envInt("IU_BENCH_OURS_CLAIMERS", 4),
	}
	p.jobs = (p.jobs + batch - 1) / batch * batch
	ctx := context.Background()
	type pair struct {
		name        string
		ours        *ours
		river, fast *riverQ
	}
	scenarios := []pair{{name: "empty"}, {name: fmt.Sprintf("%d finished", p.finished)}}
	for i := range scenarios {
		scenarios[i].ours, scenarios[i].river = newOurs(b, p.claimers), newRiver(b)
		fast := *scenarios[i].river
		fast.fast = true
		scenarios[i].fast = &fast
	}
	full := scenarios[1]
	if err := full.ours.fill(ctx, p.finished); err != nil {
		b.Fatal(err)
	}
	if err := full.river.fill(ctx, p.finished); err != nil {
		b.Fatal(err)
	}

	type series struct{ oursEnq, riverEnq, fastEnq, oursWork, riverWork []float64 }
	res := make([]series, len(scenarios))
	for rep := range p.reps {
		for si, s := range scenarios {
			r := &res[si]
			runOurs := func() {
				r.oursEnq = append(r.oursEnq, rate(b, p.jobs, func() error { return s.ours.enqueue(ctx, p.jobs) }))
				r.oursWork = append(r.oursWork, rate(b, p.jobs, func() error { return s.ours.work(ctx, p.jobs) }))
				if err := s.ours.reset(ctx); err != nil {
					b.Fatal(err)
				}
			}
			runRiver := func() {
				// InsertManyFast (COPY) enqueue measured separately, then the jobs removed.
				r.fastEnq = append(r.fastEnq, rate(b, p.jobs, func() error { return s.fast.enqueue(ctx, p.jobs) }))
				if err := s.river.reset(ctx); err != nil {
					b.Fatal(err)
				}
				r.riverEnq = append(r.riverEnq, rate(b, p.jobs, func() error { return s.river.enqueue(ctx, p.jobs) }))
				r.riverWork = append(r.riverWork, rate(b, p.jobs, func() error { return s.river.work(ctx, p.jobs) }))
				if err := s.river.reset(ctx); err != nil {
					b.Fatal(err)
				}
			}
			if rep%2 == 0 {
				runOurs()
				runRiver()
			} else {
				runRiver()
				runOurs()
			}
		}
	}

	out := &strings.Builder{}
	fmt.Fprintf(out, "\nJob queue vs River %s: %d no-op jobs per run, %d interleaved repetitions, medians; ours = %d claiming sessions x %d per claim + fn_job_complete_many; River = 100 workers, FetchCooldown 1ms.\n",
		riverVersion(), p.jobs, p.reps, p.claimers, claimBatch)
	fmt.Fprintf(out, "%-18s %-34s %12s %12s %8s\n", "table", "metric (jobs/s)", "ours", "River", "ratio")
	for si, s := range scenarios {
		r := res[si]
		rows := []struct {
			metric string
			o, v   []float64
			key    string
		}{
			{"enqueued (batches of 1000) vs InsertMany", r.oursEnq, r.riverEnq, "enqueue"},
			{"enqueued vs InsertManyFast (COPY)", r.oursEnq, r.fastEnq, "enqueue-fast"},
			{"worked", r.oursWork, r.riverWork, "work"},
		}
		for _, row := range rows {
			o, v := median(row.o), median(row.v)
			fmt.Fprintf(out, "%-18s %-34s %12.0f %12.0f %7.2fx\n", s.name, row.metric, o, v, o/v)
			b.ReportMetric(o/v, strings.ReplaceAll(s.name, " ", "")+"-"+row.key+"-ratio")
		}
	}

	// Claim latency, on the empty-table databases: 320 claims of 100 per concurrency
	// level and system, in 4 rounds that alternate which system goes first.
	s := scenarios[0]
	const claimsPerLevel, rounds = 320, 4
	backlog := 3 * claimsPerLevel * claimBatch
	for _, q := range []queue{s.ours, s.river} {
		if err := q.enqueue(ctx, backlog); err != nil {
			b.Fatal(err)
		}
	}
	fmt.Fprintf(out, "claim latency, %d per claim, %d claims per level from a %d-job backlog, %d alternating rounds (ms):\n",
		claimBatch, claimsPerLevel, backlog, rounds)
	fmt.Fprintf(out, "%-10s %10s %10s %10s %10s %10s\n", "claimers", "ours p50", "River p50", "ours p99", "River p99", "p50 ratio")
	for _, c := range []int{1, 4, 16} {
		per := claimsPerLevel / c / rounds // claims per claimer per round
		lat := func(q queue, all *[]time.Duration) {
			var mu sync.Mutex
			var wg sync.WaitGroup
			for i := range c {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range per {
						began := time.Now()
						if n, err := q.claimOnce(ctx, i); err != nil || n != claimBatch {
							b.Errorf("claim: %d rows, %v", n, err)
							return
						}
						d := time.Since(began)
						mu.Lock()
						*all = append(*all, d)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
		}
		var o, v []time.Duration
		for r := range rounds {
			if r%2 == 0 {
				lat(s.ours, &o)
				lat(s.river, &v)
			} else {
				lat(s.river, &v)
				lat(s.ours, &o)
			}
		}
		op50, vp50 := percentile(o, 0.5), percentile(v, 0.5)
		fmt.Fprintf(out, "%-10d %10.2f %10.2f %10.2f %10.2f %9.2fx\n", c, op50, vp50, percentile(o, 0.99), percentile(v, 0.99), vp50/op50)
		b.ReportMetric(op50, fmt.Sprintf("claim-p50-ms-%dclaimers", c))
		b.ReportMetric(vp50/op50, fmt.Sprintf("claim-p50-ratio-%dclaimers", c))
	}
	fmt.Fprintf(out, "(ratio > 1: ours is faster; for latency, River p50 / ours p50)\n")
	fmt.Print(out.String())
}
