// Package pgqbench measures the route worker and the producer path against PgQ, the
// PostgreSQL queue this package is modelled on, in one interleaved run per figure:
//
//	go test -run '^$' -bench . -benchtime 1x ./bench/pgq/
//
// PgQ comes from Debian's postgresql-15-pgq3 package (apt-get install postgresql-15-pgq3);
// the throwaway cluster the harness starts from the local PostgreSQL 15 binaries then has
// the extension available. When pg_available_extensions has no pgq, every benchmark here
// skips with a message naming the package (these are benchmarks, not CI tests: .ci/run
// does not install it).
//
// Three benchmarks, each printing a table of ratios measured in the same run:
//
//   - BenchmarkPgqThroughput: events routed per second at batch 100/1000/5000 by
//     fn_iu_route_worker_run over a shared outbox (5 % iu) and over an outbox of only iu
//     events, against a PgQ consumer of a queue of the same iu events doing the same
//     audit work per event (one row with a unique idempotency key in a copy of the
//     attempt table, position advanced by pgq.finish_batch in the same transaction).
//     Each side runs on its own fresh clone, after six untimed batches of ten events (so no
//     timed run is one in which a session still plans), a checkpoint and a sync(2) (so the
//     kernel is not writing the clones back while runs are timed); runs are interleaved;
//     medians, and the median of the per-round ratios (paired). Beside the wall time, each
//     run's backend use as the kernel counts it (CPU time, minor page faults, context
//     switches; /proc of the server's process, when it runs on this machine), and every
//     run's time in the log: where a gap in wall time lies that instruction counts
//     (bench/instr/count.sh) cannot show. A second line adds to each PgQ run the tick that
//     made its batch (one pgq.ticker that writes a tick, from a session of its own, timed in
//     the same round): the worker draws its batch boundary inside its run, PgQ's ticker
//     outside the consumer.
//   - BenchmarkPgqIdle: the per-call cost of a run that finds nothing (a caught-up
//     worker) against PgQ's empty pgq.next_batch, without and with another session
//     holding an xid open (a transaction that wrote), opened after the worker caught up
//     and, in another phase, before (its stored position lists it, so every run reports
//     it), and its flatness: median of the last block of 1,000 calls / median of the first.
//     Each phase runs partition maintenance once before it is timed, as a runner's tick
//     would have. A second line adds to next_batch the ticker's check of an idle queue
//     (pgq.ticker from a session of its own, as pgqd checks each queue once a ticker
//     period): in PgQ it is the ticker that asks "anything new?", and its check takes a
//     transaction id, so it writes a commit record; the worker's idle run writes nothing.
//   - BenchmarkPgqProducers: single-row insert rates with 2 concurrent clients,
//     synchronous_commit off, ~1M rows already present: pgq.insert_event,
//     fn_iu_emit_event, a direct INSERT into event_outbox, a bare table with the
//     outbox's columns and the indexes of the partition a new outbox row lands in (no row
//     rules, no triggers), the same with the row rules, and the same with only the NOTIFY
//     bridge's trigger copied onto it (gate as installed: closed). Medians of 3
//     interleaved rounds, and the median of the per-round ratios.
//
// Environment (defaults are the figures' sizes; shrink for a quick look):
//
//	BENCH_OUTBOX_ROWS       shared outbox rows (default 1,000,000; 5 % iu)
//	BENCH_PGQ_RUNS          batches timed per batch size (default 61/61/21/7 for 10/100/1000/5000;
//	                        a number caps all four)
//	BENCH_PGQ_BLOCK         throughput: runs of one side in a row per round (default 1: each run
//	                        alternates with the others; > 1: a backlog drained back to back)
//	BENCH_IDLE_CALLS        idle calls per side and phase (default 10,000; blocks of 1,000)
//	BENCH_PRODUCER_SECONDS  seconds per producer measurement (default 5)
//	BENCH_PRODUCER_ROUNDS   interleaved rounds (default 3)
package pgqbench

import (
	"os"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

func TestMain(m *testing.M) {
	// The harness starts PostgreSQL on the first NewDB: `go test ./...` runs no benchmark
	// and starts none.
	os.Exit(pgtest.Main(m))
}
