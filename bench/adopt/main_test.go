// Package adoptbench measures what adopting the first generation's database costs its
// producers: the legacy fixture (tests/adopt/testdata/legacy.sql) with 1,000,000 outbox
// rows, two producer sessions inserting and emitting as the legacy producer login does
// (internal/legacydb), and the real `iu-runner migrate up` adopting it under them.
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 60m ./bench/adopt/
//
// Each repetition builds a fresh legacy database, times the producers for a few seconds
// with nothing else happening (the baseline), then times them again while `migrate up`
// runs, in the same database. Reported, medians over the repetitions: the longest producer
// call during adoption (the stall the product promises to keep under 1 s) and its ratio
// to that target; the median and p99 call during adoption as ratios to the baseline's; how
// long `migrate up` took; and the calls that failed (must be 0).
//
// Environment:
//
//	BENCH_ADOPT_ROWS  outbox rows of the legacy database (default 1,000,000)
//	BENCH_ADOPT_REPS  repetitions, each on its own database (default 3)
//
// Nothing else should run on the machine meanwhile (flock -o /tmp/bench.lock ...).
package adoptbench

import (
	"os"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
	"github.com/iu-core/event-worker/internal/runnertest"
)

// runnerBin is the real iu-runner, built once for the process.
var runnerBin runnertest.Binary

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	runnerBin.Cleanup()
	os.Exit(code)
}
