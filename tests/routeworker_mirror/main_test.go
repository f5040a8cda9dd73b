// Package routeworkermirror drives the SQL route worker (fn_iu_route_worker_run) and the
// pure Go mirror of its decision contract (tests/routeworker_mirror/decision) with the same generated
// cases and requires the same answers.
package routeworkermirror

import (
	"os"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
