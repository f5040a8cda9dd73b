// Package upgrade proves the release rule: a released version's migrations never change
// (sql/iu-core.sha256 freezes them by hash), and an install of the latest release
// (sql/releases.txt: its commit, extracted with git archive) upgrades to this version with
// every row kept and the schema a fresh install has. `make test-upgrade` then runs the
// route-worker and queue-health tests on such an upgraded database (pgtest.UpgradeFromEnv).
package upgrade

import (
	"os"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
