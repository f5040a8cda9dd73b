// Package tests holds the integration tests of iu-core against a real PostgreSQL.
// Every test gets its own freshly migrated database from internal/pgtest.
package tests

import (
	"os"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
