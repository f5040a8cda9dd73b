// Package growthbench measures how the operator surfaces grow with history: every
// surface an operator or the runner reads, timed on a database whose outbox holds
// 1,000,000 rows and on one holding 10,000,000 rows (5 % iu, 5 route workers that have
// routed everything: 250,000 and 2,500,000 attempts), interleaved, medians; the figure is
// the large/small ratio per surface (target <= 1.5: a surface that answers from running
// counters and bounded scans does not grow with history).
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 60m ./bench/growth/
//
// Surfaces: SELECT * FROM v_queue_health; fn_iu_route_worker_health(<worker>) for a
// caught-up worker and for a registered worker that has not run yet; the three
// route-worker views (v_iu_route_worker_status, v_iu_route_dead_letter_open,
// v_iu_route_attempt_summary); fn_queue_stale_check() over 1,000 executors; the real
// `iu-runner health` binary (process start and connection included, the same on both
// sides); and, as a flat reference, an idle fn_iu_route_worker_run of a caught-up worker.
//
// Loading uses one INSERT ... SELECT generate_series for the outbox; the attempts are
// written by the route workers themselves (each run with batch 5000 until it claims
// nothing), so they carry exactly the keys, counters and cursor positions the installed
// migrations produce; the load report gives the time each step took.
//
// Environment:
//
//	BENCH_GROWTH_SMALL  outbox rows of the small database (default 1,000,000)
//	BENCH_GROWTH_LARGE  outbox rows of the large database (default 10,000,000)
//	BENCH_GROWTH_REPS   interleaved repetitions per surface (default 3, after one untimed pass)
//
// A quick look: BENCH_GROWTH_SMALL=100000 BENCH_GROWTH_LARGE=1000000 BENCH_GROWTH_REPS=3.
package growthbench

import (
	"os"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
	"github.com/iu-core/event-worker/internal/runnertest"
)

// runnerBin is the real iu-runner, built once for the process.
var runnerBin runnertest.Binary

func TestMain(m *testing.M) {
	// The harness starts PostgreSQL on the first NewDB: `go test ./...` runs no benchmark
	// and starts none.
	code := pgtest.Main(m)
	runnerBin.Cleanup()
	os.Exit(code)
}
