// Package runner tests the real iu-runner binary, built once per test process, against a
// real PostgreSQL (internal/pgtest): exit codes, the tick pass, the long-running loop's
// NOTIFY and poll paths, recovery after its backends are terminated, clean shutdown, the
// HTTP endpoints, the health command and the configuration precedence.
//
// IU_RUNNER_TEST_RACE=1 builds the binary with -race, so the long-running loop, the
// notifier and the HTTP handlers run under the race detector (a race exits 66, which
// the SIGTERM checks report).
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
