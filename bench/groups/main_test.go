// Package groupsbench measures parallel consumption of one domain: the same backlog routed
// by one route worker against a group of two members run by two concurrent sessions
// (sql/functions/route_worker/README.md, "Groups: N members share one domain"):
//
//	flock -o /tmp/bench.lock go test -run '^$' -bench . -benchtime 1x ./bench/groups/
//	bash bench/groups/run.sh            # the same, printing the summary table only
//
// One database is loaded once (BENCH_GROUP_EVENTS events of domain iu, default 200,000,
// over 1,000 streams, with dry_run / disabled / unrouted routes, then VACUUM ANALYZE) and
// every measurement runs on its own fresh clone of it (CREATE DATABASE ... TEMPLATE), so
// none sees another's attempts or positions:
//
//   - single: fn_iu_route_worker_run('w', batch) from one session until it is caught up;
//   - group:  members g-1 and g-2 of group g (registered before anything is routed, so the
//     shares apply at once), each run from its own session in its own goroutine, both
//     started together; timed until both are caught up.
//
// Rate = events routed / wall time to drain the backlog. The two are measured interleaved
// (the order rotating from round to round; BENCH_GROUP_REPS rounds, default 3) so background
// load hits both alike; the figures are medians, and the ratio is group rate / single
// rate (target on a 2-core machine: >= 1.6). Each measurement checks exactly one attempt
// per event under the worker's (or the group's) name.
package groupsbench

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
