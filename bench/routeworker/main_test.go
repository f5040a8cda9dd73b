// Package routeworkerbench measures the route worker's throughput against the set-based
// bound on a shared outbox of a million rows:
//
//	go test -run '^$' -bench . -benchtime 1x ./bench/routeworker/
//
// For each batch size (100, 1000, 5000) two measurements run, each on its own fresh
// clone of one loaded database (so neither sees the other's attempts, cursor or cache
// state from a previous measurement):
//
//   - worker: fn_iu_route_worker_run(worker, batch) called repeatedly from a freshly
//     registered cursor; events routed per second = events claimed / wall time.
//   - bound:  the least work the same result needs — one statement per batch: a keyset
//     page of the same iu events (event_domain, txid, id), a single INSERT ... SELECT
//     writing the same attempt rows (same columns, same idempotency keys, ON CONFLICT DO
//     NOTHING) and an UPDATE advancing a cursor row.
//
// The two clones are measured interleaved, run by run (worker, bound, bound, worker, ...),
// so background load hits both sides alike; the reported figure is the median run.
//
// The ratio worker/bound says what the worker's extra guarantees cost (busy lock, gates,
// snapshot windows, per-page isolation, counters, summary, heartbeat). Target at batch
// 1000: ratio >= 0.6. BENCH_OUTBOX_ROWS overrides the outbox size (default 1,000,000)
// for a quick look; the figures in reports use the default.
package routeworkerbench

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
