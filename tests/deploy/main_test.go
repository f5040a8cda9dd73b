// Package deploy tests the shipped deployment artifacts the way operators use them: the
// crontab's lines run as cron runs them, the binary's version and migration gates.
// (The Kubernetes manifests, Dockerfile, systemd units and Prometheus rules are checked by
// `make deploy-check` with promtool, systemd-analyze and the deploy/check module.)
package deploy

import (
	"os"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
	"github.com/iu-core/event-worker/internal/runnertest"
)

var runnerBin runnertest.Binary

func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	runnerBin.Cleanup()
	os.Exit(code)
}
