// Package runner benchmarks the real iu-runner binary against a real PostgreSQL:
//
//   - BenchmarkWakeLatency: from an event's commit to the commit of its route attempt, on
//     the NOTIFY path (hybrid, bridge on, poll 60 s so the poll never helps), against the
//     fallback-poll baseline measured in the same run (hybrid, bridge off, poll 250 ms).
//   - BenchmarkIdleRSS: the resident memory of an idle `iu-runner run`.
//
// # How latency is measured
//
// Both ends are commit timestamps taken by the same server clock: the benchmark runs a
// private cluster with track_commit_timestamp = on, and reads
// pg_xact_commit_timestamp(xmin) of the event_outbox row (the emitting transaction) and
// of its iu_route_attempt row (the worker's transaction, or its subtransaction, which
// carries the same commit timestamp). No Go clock, no polling interval of the benchmark
// itself and no client round trip enters the figure: the benchmark only waits for the
// attempt to exist before emitting the next event, and computes the latencies afterwards.
// attempt.created_at is not usable: it is now() of the worker transaction, i.e. its start.
//
// Targets: NOTIFY p50 <= 10 ms, p99 <= 50 ms; idle RSS <= 30 MB.
//
//	go test -run '^$' -bench . -benchtime 1x ./bench/runner/
package runner

import (
	"os"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	runnerBin.Cleanup()
	os.Exit(code)
}
