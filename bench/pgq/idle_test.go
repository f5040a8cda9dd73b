package pgqbench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// idlePhase is one idle measurement: per-call times of both sides, interleaved.
type idlePhase struct {
	name      string
	ours, pgq []time.Duration
	tick      []time.Duration // the ticker's check of an idle queue (PgQ's share of "anything new?")
}

// flatness is the median of the last block over the median of the first.
func flatness(ds []time.Duration, block int) float64 {
	first, last := median(ds[:block]), median(ds[len(ds)-block:])
	return float64(last) / float64(first)
}

// BenchmarkPgqIdle: an fn_iu_route_worker_run that finds nothing (a caught-up worker on
// the shared outbox) against PgQ's pgq.next_batch with no new tick, called alternately
// on one fresh clone per phase: "free" (nothing else running), "held xid" (another
// session inside a transaction that wrote, opened after the worker caught up, so the xmin
// horizon cannot advance and no dead row version can be vacuumed), "held in position"
// (the same transaction opened before the worker caught up: its stored position lists it
// in progress, so every poll asks who holds it and reports it in held_open_by), and the
// history phase below. Each phase's clone has had one partition maintenance call after the
// worker caught up, as a runner's tick makes after its workers (the bounds the idle path
// plans the outbox by are maintenance's to move). Per-call medians, ours/PgQ, and flatness:
// last block / first block of 1,000 calls (target for ours: <= 1.0x PgQ, flatness <= 1.1).
//
// A second line counts the rest of what an idle PgQ does to answer "is anything new?":
// next_batch only reads the ticks, and the ticker (pgqd, once a ticker period, 1 s by
// default, the cadence a consumer polls at) is what compares the queue's event sequence
// with its last tick. Each round also times one pgq.ticker call on an idle queue from a
// session of its own, as pgqd makes it: it mostly writes no tick, but it takes a
// transaction id (its state checks call txid_current()), so each check writes a commit
// record to the WAL (136 bytes in a scratch cluster), where the worker's idle run takes
// no transaction id and writes nothing. The line is ours / (next_batch
// + that check); the target is set against next_batch alone.
func BenchmarkPgqIdle(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	rows := pgtest.EnvInt(b, "BENCH_OUTBOX_ROWS", defaultRows, 20_000)
	calls := pgtest.EnvInt(b, "BENCH_IDLE_CALLS", 10_000, 20)
	block := 1000
	if calls < 2*block {
		block = calls / 2
	}

	tpl := pgtest.NewDB(b)
	requirePgq(ctx, b, tpl)
	loadOutbox(ctx, b, tpl, rows, false)
	tpl.Pool.Close()
	h := tpl.Harness()

	// The third phase measures what history costs an idle run when it is kept forever:
	// every attached partition is one more relation a worker statement's generic plan may
	// have to start a scan of. Its template gets partitions of 1,000 transaction ids and a
	// transaction counter moved past extraParts of them before the same load, so history
	// holds that many closed partitions below the current one (years of a busy cluster at
	// the default width of 100,000,000).
	const extraParts = 100
	tplParts := pgtest.NewDB(b)
	requirePgq(ctx, b, tplParts)
	pastPartitions(ctx, b, tplParts, extraParts)
	loadOutbox(ctx, b, tplParts, rows, false)
	tplParts.Pool.Close()

	var phases []idlePhase
	partsPhase := fmt.Sprintf("+%d parts", extraParts)
	for i, name := range []string{"free", "held xid", "held in position", partsPhase} {
		heldAfter, heldBefore := name == "held xid", name == "held in position"
		src := tpl.Name
		if name == partsPhase {
			src = tplParts.Name
		}
		b.Run("phase="+strings.NewReplacer(" ", "_", "+", "").Replace(name), func(b *testing.B) {
			var ph idlePhase
			for range b.N {
				b.StopTimer()
				dbName := fmt.Sprintf("%s_idle%d", tpl.Name, i)
				conn := cloneDB(ctx, b, h, src, dbName)
				const worker = "bench_idle"
				exec(ctx, b, conn, "registering the worker", `SELECT fn_iu_route_worker_register($1)`, worker)
				exec(ctx, b, conn, "scratch table", `CREATE TABLE bench_hold (x int)`)
				// hold: another session's transaction that wrote a row, open for the phase.
				hold := func() {
					holder := connect(ctx, b, h.Server.DBURL(dbName))
					tx, err := holder.Begin(ctx)
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { _ = tx.Rollback(context.Background()) })
					var xid *string
					if err := tx.QueryRow(ctx, `INSERT INTO bench_hold VALUES (1) RETURNING pg_current_xact_id_if_assigned()::text`).Scan(&xid); err != nil || xid == nil {
						b.Fatalf("holding an xid: %v %v", xid, err)
					}
				}
				if heldBefore {
					// Held, then one event committed after it: a snapshot lists in progress only
					// ids below its xmax (the latest completed one + 1), so the window that routes
					// that event lists the held one, and so does the position it stores.
					hold()
					exec(ctx, b, conn, "an event after the held xid", `SELECT fn_iu_emit_event('iu', 'unit_version_created', 'main')`)
				}
				caught := catchUp(ctx, b, conn, worker)
				pgqQueue(ctx, b, conn, "idle_q", "idle_c")
				exec(ctx, b, conn, "vacuum analyze", `VACUUM ANALYZE`)
				// As a runner's tick runs it after its workers (internal/tick): partition
				// maintenance records the closes and moves the bounds the idle path plans the
				// outbox by (fn_iu_outbox_hot_refresh), as it would in production before the
				// polls measured here. A clone nobody maintained since its load would time the
				// state a fresh install is in until its first tick.
				exec(ctx, b, conn, "partition maintenance", `SELECT fn_iu_partition_maintain()`)
				b.Logf("%s: worker caught up over %d events", name, caught)
				if heldAfter {
					hold()
				}
				// The ticker's session and its idle queue (no consumer reads it). A queue's
				// first checks make ticks (its first tick has no predecessor to back off
				// from); then, with no new event, pgq.ticker mostly answers NULL, backing off
				// towards the idle period as pgqd's checks do.
				ticker := connect(ctx, b, h.Server.DBURL(dbName))
				exec(ctx, b, ticker, "pgq.create_queue", `SELECT pgq.create_queue('tick_q')`)
				for range 3 {
					pgqTicker(ctx, b, ticker, "tick_q")
				}
				ph = idlePhase{name: name}
				b.StartTimer()
				for c := range calls {
					ourCall := func() {
						t0 := time.Now()
						raw := workerCall(ctx, b, conn, worker, 100)
						ph.ours = append(ph.ours, time.Since(t0))
						r := decodeRun(b, raw)
						if r.Claimed != 0 {
							b.Fatalf("idle worker run claimed %d", r.Claimed)
						}
						if (r.HeldOpenCount != 0) != heldBefore {
							b.Fatalf("%s: the run reports %d holders of its position", name, r.HeldOpenCount)
						}
					}
					pgqCall := func() {
						t0 := time.Now()
						n := pgqEmpty(ctx, b, conn)
						ph.pgq = append(ph.pgq, time.Since(t0))
						if n != nil {
							b.Fatalf("pgq.next_batch on an idle queue returned batch %d", *n)
						}
					}
					tickCall := func() {
						t0 := time.Now()
						pgqTicker(ctx, b, ticker, "tick_q")
						ph.tick = append(ph.tick, time.Since(t0))
					}
					if c%2 == 0 {
						ourCall()
						pgqCall()
						tickCall()
					} else {
						pgqCall()
						tickCall()
						ourCall()
					}
				}
			}
			b.ReportMetric(us(median(ph.ours)), "ours-µs/call")
			b.ReportMetric(us(median(ph.pgq)), "pgq-µs/call")
			b.ReportMetric(float64(median(ph.ours))/float64(median(ph.pgq)), "ours/pgq")
			b.ReportMetric(us(median(ph.tick)), "tick-µs/call")
			b.ReportMetric(ph.withTicker(), "ours/pgq+tick")
			b.ReportMetric(flatness(ph.ours, block), "ours-last/first")
			b.ReportMetric(flatness(ph.pgq, block), "pgq-last/first")
			phases = append(phases, ph)
		})
	}

	var tbl strings.Builder
	fmt.Fprintf(&tbl, "idle cost: caught-up fn_iu_route_worker_run(w, 100) vs empty pgq.next_batch, %d calls each per phase, alternating; shared outbox %d rows\n", calls, rows)
	fmt.Fprintf(&tbl, "%-16s | %10s %10s %8s | %11s %11s %11s %11s | %8s %13s\n", "phase", "ours µs", "PgQ µs", "ours/PgQ",
		"ours first", "ours last", "ours l/f", "PgQ l/f", "tick µs", "ours/PgQ+tick")
	for _, ph := range phases {
		fmt.Fprintf(&tbl, "%-16s | %10.0f %10.0f %8s | %11.0f %11.0f %11s %11s | %8.0f %13s\n", ph.name,
			us(median(ph.ours)), us(median(ph.pgq)), fmtRatio(float64(median(ph.ours))/float64(median(ph.pgq))),
			us(median(ph.ours[:block])), us(median(ph.ours[len(ph.ours)-block:])),
			fmtRatio(flatness(ph.ours, block)), fmtRatio(flatness(ph.pgq, block)),
			us(median(ph.tick)), fmtRatio(ph.withTicker()))
	}
	fmt.Fprintf(&tbl, "µs = median per call (round trip included); first/last = median of the first/last block of %d calls; l/f = last/first\n", block)
	fmt.Fprintf(&tbl, "held xid: another session's open transaction that wrote a row, for the whole phase, opened after the worker caught up\n")
	fmt.Fprintf(&tbl, "held in position: the same, opened before the worker caught up: its stored position lists it, so every poll reports it (held_open_by)\n")
	fmt.Fprintf(&tbl, "+%d parts: as free, over %d more closed history partitions per table (each attached partition is a relation every worker statement's plan holds)\n", extraParts, extraParts)
	fmt.Fprintf(&tbl, "tick µs: pgq.ticker on an idle queue from a session of its own, as pgqd checks each queue once a ticker period (1 s) at which a consumer polls; ours/PgQ+tick: ours over next_batch + that check, the median of the per-call ratios (second line, no target)\n")
	fmt.Fprintf(&tbl, "target: ours/PgQ <= 1.0 free and with the held xid, flat over history; ours l/f <= 1.1 with the held xid")
	fmt.Println(tbl.String())
}

// withTicker is the median over the rounds of ours / (next_batch + the ticker's check),
// each round's three calls taken back to back.
func (ph idlePhase) withTicker() float64 {
	n := min(len(ph.ours), len(ph.pgq), len(ph.tick))
	xs := make([]float64, n)
	for i := range n {
		xs[i] = ph.ours[i].Seconds() / (ph.pgq[i] + ph.tick[i]).Seconds()
	}
	return medianF(xs)
}

// pgqEmpty calls pgq.next_batch on the idle queue; nil means no batch (the idle answer).
func pgqEmpty(ctx context.Context, b *testing.B, conn *pgx.Conn) *int64 {
	b.Helper()
	var id *int64
	if err := conn.QueryRow(ctx, `SELECT pgq.next_batch('idle_q', 'idle_c')`).Scan(&id); err != nil {
		b.Fatalf("pgq.next_batch: %v", err)
	}
	return id
}

// pastPartitions gives db's history n closed partitions below the current one
// (pgtest.PastPartitionsSQL). Run before anything is loaded.
func pastPartitions(ctx context.Context, b *testing.B, db *pgtest.DB, n int) {
	b.Helper()
	for _, stmt := range pgtest.PastPartitionsSQL(n) {
		if _, err := db.Pool.Exec(ctx, stmt); err != nil {
			b.Fatalf("history partitions: %v", err)
		}
	}
	var parts int
	if err := db.Pool.QueryRow(ctx, `SELECT count(*) FROM iu_history_partition WHERE table_name = 'event_outbox'`).Scan(&parts); err != nil || parts < n {
		b.Fatalf("want %d or more outbox partitions, have %d (%v)", n, parts, err)
	}
}
