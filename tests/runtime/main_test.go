// Package runtimescripts tests the operator runtime scripts in sql/iu-core/runtime
// (060 activate, 070 verify, 080 disable) the way an operator runs them: the real psql
// binary, `psql "$URL" -X -v ON_ERROR_STOP=1 -f file`, against a freshly migrated
// database per test.
package runtimescripts

import (
	"os"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
