package pgqbench

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// batchPlan: batch size and how many consecutive batches one measurement times (the
// figure is the median run, robust to a noisy neighbour and to the first call's plan).
// Batch 10 is no target of its own: nearly all of its time is a run's fixed cost (the
// statements every run executes whatever its size), which the per-event cost from batches
// 100 and 1000 separates from the rest.
var batchPlan = []struct{ batch, runs int }{
	{10, 61},
	{100, 61},
	{1000, 21},
	{5000, 7},
}

// The warm-up every consumer's session gets before its timed runs: warmRuns untimed
// batches of warmBatch events (the first events, in claim order, on every side). PgQ's
// consumer is PL/pgSQL under the default plan_cache_mode, so a session plans each of its
// statements anew on their first five executions before it settles on a generic plan; the
// worker pins force_generic_plan and plans once. A long-running consumer has done both long
// ago, so neither is timed: at batch 5000 the median of seven runs would otherwise be one
// that PgQ planned.
const (
	warmRuns  = 6
	warmBatch = 10
)

// side is one consumer measured at one batch size.
type side struct {
	name   string
	events int
	perRun []time.Duration
	step   func(batch int) int // one batch of at most batch events; returns the events it consumed
	prep   func()              // untimed, before each timed step (nil: none)
	batch  int
	pid    int           // the backend serving the side (0: not known)
	stats  []backendStat // the backend's use over each timed run, when /proc has it
}

// warmUp consumes the warm-up batches, untimed.
func (s *side) warmUp() {
	for range warmRuns {
		if s.prep != nil {
			s.prep()
		}
		s.step(warmBatch)
	}
}

func (s *side) run() {
	if s.prep != nil {
		s.prep()
	}
	before, ok := readBackendStat(s.pid)
	t0 := time.Now()
	n := s.step(s.batch)
	s.perRun = append(s.perRun, time.Since(t0))
	s.events += n
	if after, ok2 := readBackendStat(s.pid); ok && ok2 {
		s.stats = append(s.stats, after.sub(before))
	}
}

// paired is the median of the per-round ratios of ours to peer (the peer's time for a run
// over ours: > 1, ours faster), the peer's time in a round being the sum of its sides' runs
// in that round (PgQ's consumer, and for the second line the tick that made its batch). A
// round runs every side once, back to back, within a few hundred ms at most, so a round's
// ratio compares runs taken at the same speed of the host, which moves by 1.5x for seconds
// at a time on this kind of machine (see fmtRuns' log); the ratio of the medians can pair
// one side's fast runs with the other's slow ones.
func paired(ours *side, peer ...*side) float64 {
	n := len(ours.perRun)
	for _, p := range peer {
		n = min(n, len(p.perRun))
	}
	xs := make([]float64, n)
	for i := range n {
		var t time.Duration
		for _, p := range peer {
			t += p.perRun[i]
		}
		xs[i] = t.Seconds() / ours.perRun[i].Seconds()
	}
	return medianF(xs)
}

// settle lets the writes of the set-up finish before the timed runs: a checkpoint, then
// the kernel's write-back of every dirty page (sync(2)). The clones are copies of the
// outbox databases (hundreds of MB at the default size) and the queue's load is fresh, so
// without it the kernel writes them back while the first runs are timed, on the core the
// consumer's backend does not have, and some runs of every side take 1.5x the others.
func settle(ctx context.Context, b *testing.B, conn *pgx.Conn) {
	b.Helper()
	exec(ctx, b, conn, "checkpoint before the timed runs", `CHECKPOINT`)
	syscall.Sync()
}

// fmtRuns lists a side's timed runs, ms each, and the backend's CPU ms of each when read.
func fmtRuns(s *side) string {
	var out strings.Builder
	for i, d := range s.perRun {
		fmt.Fprintf(&out, " %.1f", ms(d))
		if i < len(s.stats) {
			fmt.Fprintf(&out, "/%.1f", float64(s.stats[i].cpuNs)/1e6)
		}
	}
	return out.String()
}

// usage is the median over the timed runs of the backend's CPU time (µs), minor page
// faults and context switches a run; ok is false when they were not read.
func (s *side) usage() (cpuUs, minflt, volCS, involCS float64, ok bool) {
	if len(s.stats) == 0 {
		return 0, 0, 0, 0, false
	}
	col := func(f func(backendStat) int64) float64 {
		xs := make([]float64, len(s.stats))
		for i, st := range s.stats {
			xs[i] = float64(f(st))
		}
		return medianF(xs)
	}
	return col(func(x backendStat) int64 { return x.cpuNs }) / 1e3, col(func(x backendStat) int64 { return x.minflt }),
		col(func(x backendStat) int64 { return x.volCS }), col(func(x backendStat) int64 { return x.involCS }), true
}

// rate is events per second at the median run.
func (s *side) rate() float64 {
	return float64(s.events) / float64(len(s.perRun)) / median(s.perRun).Seconds()
}

// BenchmarkPgqThroughput: events routed per second at batch 100/1000/5000 by the route
// worker over a shared outbox (5 % iu) and over an outbox of only iu events, next to a
// PgQ consumer of a queue of the same iu events doing the same audit work, measured
// interleaved run by run on three fresh clones; the figures are ours/PgQ.
//
// A second line adds to each PgQ run the tick that made its batch. The worker draws its
// own batch boundary inside its run (its snapshot, its position); a PgQ consumer's is a
// tick the ticker (pgqd) wrote and committed beforehand, in a transaction of its own, which
// the baseline leaves out (the queue is loaded with its ticks before the timed runs). Each
// round also times one materialized tick on a queue of its own (one event inserted,
// untimed, then pgq.ticker from the ticker's session), and iuonly/pgq+tick-paired is the
// median of the per-round ratios (PgQ's run + that tick) / ours. No target is set on it.
func BenchmarkPgqThroughput(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	rows := pgtest.EnvInt(b, "BENCH_OUTBOX_ROWS", defaultRows, 20_000)
	maxRuns := pgtest.EnvInt(b, "BENCH_PGQ_RUNS", 0, 3)
	block := pgtest.EnvInt(b, "BENCH_PGQ_BLOCK", 1, 1)

	// PgQ's side is a clone of the iu-only outbox (the same iu events, in the same order,
	// and 1/20 of the size): a clone of the shared one would add a copy of the whole shared
	// log to the buffer pool's working set that PgQ's consumer never reads, and push the
	// worker's pages out of shared buffers.
	iuOnly := pgtest.NewDB(b)
	requirePgq(ctx, b, iuOnly)
	shared := pgtest.NewDB(b)
	loadStart := time.Now()
	loadOutbox(ctx, b, shared, rows, false)
	loadOutbox(ctx, b, iuOnly, rows, true)
	if _, err := iuOnly.Pool.Exec(ctx, pgqSetup); err != nil {
		b.Fatalf("PgQ consumer setup: %v", err)
	}
	loadTime := time.Since(loadStart).Round(time.Millisecond)
	var iu int
	shared.QueryRow(b, `SELECT count(*) FROM event_outbox WHERE event_domain = 'iu'`, nil, &iu)
	shared.Pool.Close() // a template may have no other sessions
	iuOnly.Pool.Close()
	h := shared.Harness()

	type result struct {
		batch, runs            int
		shared, iu, pgq, pgqOC *side
		tick                   *side // one materialized tick a round (second line)
	}
	var results []result
	seq := 0
	for _, p := range batchPlan {
		runs := p.runs
		if maxRuns > 0 && maxRuns < runs {
			runs = maxRuns
		}
		b.Run(fmt.Sprintf("batch=%d", p.batch), func(b *testing.B) {
			if warmRuns*warmBatch+p.batch*runs > iu {
				b.Fatalf("plan %d x %d (and %d x %d to warm up) exceeds the %d iu events: raise BENCH_OUTBOX_ROWS or lower BENCH_PGQ_RUNS",
					runs, p.batch, warmRuns, warmBatch, iu)
			}
			var r result
			for range b.N {
				seq++
				b.StopTimer()
				ws := cloneDB(ctx, b, h, shared.Name, fmt.Sprintf("%s_ws%d", shared.Name, seq))
				wi := cloneDB(ctx, b, h, iuOnly.Name, fmt.Sprintf("%s_wi%d", shared.Name, seq))
				pqName := fmt.Sprintf("%s_pq%d", shared.Name, seq)
				loader := cloneDB(ctx, b, h, iuOnly.Name, pqName)
				pgqQueue(ctx, b, loader, "bench_q", pgqConsumer)
				// the second line's consumer (ON CONFLICT DO NOTHING) reads the same batches
				exec(ctx, b, loader, "pgq.register_consumer", `SELECT pgq.register_consumer('bench_q', $1)`, pgqConsumerOC)
				pgqLoadBatches(ctx, b, loader, "bench_q", 0, warmBatch, warmRuns)
				pgqLoadBatches(ctx, b, loader, "bench_q", warmRuns*warmBatch, p.batch, runs)
				// Each PgQ consumer is a session of its own, like each of ours: the loader's
				// session has written MBs of WAL and touched most of shared memory, which a
				// fresh consumer would otherwise inherit and ours would not; and a session
				// that ran both PgQ consumers would run twice per round, its caches (the
				// backend's plans, catalog caches, and the CPU's) warm from the other's turn
				// where each of ours is cold from three others'.
				pq := connect(ctx, b, h.Server.DBURL(pqName))
				pqOC := connect(ctx, b, h.Server.DBURL(pqName))
				tk := connect(ctx, b, h.Server.DBURL(pqName))
				r = result{batch: p.batch, runs: runs,
					shared: workerSide(ctx, b, "ours, shared outbox", ws, p.batch),
					iu:     workerSide(ctx, b, "ours, iu-only outbox", wi, p.batch),
					pgq:    pgqSide(ctx, b, pq, p.batch, false),
					pgqOC:  pgqSide(ctx, b, pqOC, p.batch, true),
					tick:   tickSide(ctx, b, loader, tk)}
				sides := []*side{r.shared, r.iu, r.pgq, r.pgqOC, r.tick}
				for _, s := range sides {
					s.warmUp()
				}
				settle(ctx, b, pq)
				b.StartTimer()
				// Interleaved, run by run, the order rotating, so all four see the same
				// background load.
				// BENCH_PGQ_BLOCK > 1 runs each side that many times in a row per round
				// (a consumer draining a backlog back to back, its caches warm from its own
				// previous run) instead of once (each run cold from the other sides').
				blk := min(block, max(1, runs/5))
				for i := range runs / blk {
					for k := range sides {
						for range blk {
							sides[(i+k)%len(sides)].run()
						}
					}
				}
			}
			for _, s := range []*side{r.shared, r.iu, r.pgq, r.pgqOC, r.tick} {
				b.Logf("%s, batch %d: ms per run %s", s.name, p.batch, fmtRuns(s))
			}
			b.ReportMetric(r.shared.rate(), "shared-events/s")
			b.ReportMetric(r.iu.rate(), "iuonly-events/s")
			b.ReportMetric(r.pgq.rate(), "pgq-events/s")
			b.ReportMetric(r.shared.rate()/r.pgq.rate(), "shared/pgq")
			b.ReportMetric(r.iu.rate()/r.pgq.rate(), "iuonly/pgq")
			b.ReportMetric(r.iu.rate()/r.pgqOC.rate(), "iuonly/pgq-onconflict")
			b.ReportMetric(paired(r.iu, r.pgq), "iuonly/pgq-paired")
			b.ReportMetric(us(median(r.tick.perRun)), "tick-µs")
			b.ReportMetric(paired(r.iu, r.pgq, r.tick), "iuonly/pgq+tick-paired")
			results = append(results, r)
		})
	}

	var tbl strings.Builder
	fmt.Fprintf(&tbl, "route worker vs PgQ throughput: shared outbox %d rows (%d iu), iu-only outbox %d rows, PgQ queue of the same iu events; loaded in %s; %d CPUs\n",
		rows, iu, iu, loadTime, runtime.NumCPU())
	fmt.Fprintf(&tbl, "%6s %5s | %11s %9s | %11s %9s | %11s %9s | %10s %10s %6s | %11s %13s | %7s %12s\n", "batch", "runs",
		"shared ms", "ev/s", "iu-only ms", "ev/s", "PgQ ms", "ev/s", "shared/PgQ", "iu-only/PgQ", "paired", "PgQ-OC ev/s", "iu-only/PgQ-OC", "tick ms", "+tick paired")
	for _, r := range results {
		fmt.Fprintf(&tbl, "%6d %5d | %11.2f %9.0f | %11.2f %9.0f | %11.2f %9.0f | %10s %10s %6s | %11.0f %13s | %7.2f %12s\n", r.batch, r.runs,
			ms(median(r.shared.perRun)), r.shared.rate(), ms(median(r.iu.perRun)), r.iu.rate(),
			ms(median(r.pgq.perRun)), r.pgq.rate(), fmtRatio(r.shared.rate()/r.pgq.rate()), fmtRatio(r.iu.rate()/r.pgq.rate()),
			fmtRatio(paired(r.iu, r.pgq)), r.pgqOC.rate(), fmtRatio(r.iu.rate()/r.pgqOC.rate()),
			ms(median(r.tick.perRun)), fmtRatio(paired(r.iu, r.pgq, r.tick)))
	}
	fmt.Fprintf(&tbl, "ms per batch at the median run; ratios are events/s ours / PgQ (> 1: ours faster), paired the median of the per-round ratios (iu-only / PgQ); same audit row per event on both sides; PgQ writes it with a plain INSERT in the batch's transaction (the baseline), PgQ-OC with ON CONFLICT DO NOTHING (second line); tick ms: one materialized pgq.ticker a round, from the ticker's own session, and +tick paired the median of the per-round ratios (PgQ's run + that tick) / ours (second line: the batch boundary PgQ's ticker draws outside the consumer); clones, runs interleaved\n")
	// Where the wall time went that instruction counts cannot show: the backend's own use
	// per run, as the kernel counts it (medians over the timed runs).
	if _, _, _, _, ok := results[0].iu.usage(); ok {
		fmt.Fprintf(&tbl, "backend per run (median): %6s | %-28s | %-28s | %-28s | %s\n", "batch", "shared: cpu µs, minflt, cs", "iu-only", "PgQ", "iu-only/PgQ cpu")
		for _, r := range results {
			cell := func(s *side) (string, float64) {
				c, f, v, i, _ := s.usage()
				return fmt.Sprintf("%8.0f %7.0f %5.0f+%-4.0f", c, f, v, i), c
			}
			sh, _ := cell(r.shared)
			io, ic := cell(r.iu)
			pq, pc := cell(r.pgq)
			fmt.Fprintf(&tbl, "backend per run (median): %6d | %-28s | %-28s | %-28s | %s\n", r.batch, sh, io, pq, fmtRatio(pc/ic))
		}
		fmt.Fprintf(&tbl, "(cpu: /proc/<pid>/schedstat; minflt: minor page faults; cs: voluntary+involuntary context switches; the ratio > 1: ours uses less CPU)\n")
	}
	fmt.Fprintf(&tbl, "target: ours/PgQ >= 1.2 at batch 1000 and 5000")
	fmt.Println(tbl.String())
}

// The PgQ consumers' names have the worker's length and their audit rows the worker's key
// prefix, so both sides write rows of the same size (the same bytes in the heap, the WAL
// and the unique key's comparisons): only how each finds its events differs.
const (
	benchWorker   = "bench_worker"
	pgqConsumer   = "bench_worker" // PgQ's own namespace: it may share the worker's name
	pgqConsumerOC = "bench_wrk_oc"
)

// workerSide registers a fresh worker on conn; each step is one fn_iu_route_worker_run
// that must claim a full batch.
func workerSide(ctx context.Context, b *testing.B, name string, conn *pgx.Conn, batch int) *side {
	b.Helper()
	const worker = benchWorker
	exec(ctx, b, conn, "registering the worker", `SELECT fn_iu_route_worker_register($1)`, worker)
	warmSession(ctx, b, conn)
	// The iu rows in the claim's order, through the (event_domain, txid, id) index: every
	// heap page the worker will read passes through shared buffers in this session, as
	// PgQ's just-written queue is. (A count over the domain is a sequential scan, which on
	// the shared outbox, larger than a quarter of shared_buffers, reads through a small
	// ring and leaves the pages out of shared buffers.)
	exec(ctx, b, conn, "warming the iu rows", `SELECT count(event_type) FROM (SELECT event_type FROM event_outbox WHERE event_domain = 'iu' ORDER BY txid, id) s`)
	return &side{name: name, batch: batch, pid: backendPID(ctx, conn), step: func(batch int) int {
		r := workerRun(ctx, b, conn, worker, batch)
		if r.Claimed != batch {
			b.Fatalf("%s: worker run claimed %d of %d", name, r.Claimed, batch)
		}
		return r.Claimed
	}}
}

// warmSession puts a consumer's session where a long-running consumer's is: it has written
// through the whole WAL buffer ring (twice its size), so the WAL of its batches lands in
// memory this process has already mapped. A fresh session instead takes a page fault on
// every WAL buffer page it touches first (~2,000 over the ring at the default size), which
// is a cost of having just connected, not of consuming. Both sides get the same warm-up.
func warmSession(ctx context.Context, b *testing.B, conn *pgx.Conn) {
	b.Helper()
	var ring int64
	if err := conn.QueryRow(ctx, `SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'wal_buffers'`).Scan(&ring); err != nil {
		b.Fatalf("reading wal_buffers: %v", err)
	}
	var written int64
	for rows := 100_000; written < 2*ring; rows *= 2 {
		var before string
		if err := conn.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&before); err != nil {
			b.Fatalf("reading the WAL position: %v", err)
		}
		exec(ctx, b, conn, "writing WAL to warm the session",
			fmt.Sprintf(`CREATE TABLE bench_walwarm AS SELECT g FROM generate_series(1, %d) g`, rows))
		exec(ctx, b, conn, "dropping the WAL warm-up table", `DROP TABLE bench_walwarm`)
		if err := conn.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn)::bigint`, before).Scan(&written); err != nil {
			b.Fatalf("measuring the WAL written: %v", err)
		}
	}
}

// tickSide: each step is one pgq.ticker call from the ticker's session (conn) that must
// write a tick, on a queue of its own into which prep inserts one event from another
// session, untimed: what pgqd does once per batch boundary of a consumer's queue. It
// consumes no events (its warm-up ticks too).
func tickSide(ctx context.Context, b *testing.B, loader, conn *pgx.Conn) *side {
	b.Helper()
	exec(ctx, b, loader, "pgq.create_queue", `SELECT pgq.create_queue('tick_q')`)
	exec(ctx, b, loader, "pgq.set_queue_config", `SELECT pgq.set_queue_config('tick_q', 'ticker_max_count', '1')`)
	warmSession(ctx, b, conn) // as pgqd's long-running session: the WAL ring mapped
	return &side{name: "PgQ's tick", pid: backendPID(ctx, conn),
		prep: func() {
			exec(ctx, b, loader, "an event for the tick", `SELECT pgq.insert_event('tick_q', 't', 'x')`)
		},
		step: func(int) int {
			if pgqTicker(ctx, b, conn, "tick_q") == nil {
				b.Fatalf("pgq.ticker after a new event wrote no tick")
			}
			return 0
		}}
}

// pgqSide: each step is one bench_pgq_consume call that must consume one full chunk;
// onConflict is the second line's consumer (ON CONFLICT DO NOTHING).
func pgqSide(ctx context.Context, b *testing.B, conn *pgx.Conn, batch int, onConflict bool) *side {
	b.Helper()
	warmSession(ctx, b, conn)
	exec(ctx, b, conn, "warming the PgQ rows", `SELECT count(ev_type) FROM pgq.event_template`)
	consumer, name := pgqConsumer, "PgQ"
	if onConflict {
		consumer, name = pgqConsumerOC, "PgQ, ON CONFLICT"
	}
	return &side{name: name, batch: batch, pid: backendPID(ctx, conn), step: func(batch int) int {
		var n int
		if err := conn.QueryRow(ctx, `SELECT bench_pgq_consume('bench_q', $1, $2)`, consumer, onConflict).Scan(&n); err != nil {
			b.Fatalf("PgQ consumer: %v", err)
		}
		if n != batch {
			b.Fatalf("PgQ batch held %d events, want %d", n, batch)
		}
		return n
	}}
}
