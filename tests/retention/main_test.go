// Package retention holds the integration tests of history partitioning and retention
// (migration 013_partitioned_history) against a real PostgreSQL: the conversion of a populated install, the
// partition maintenance, and fn_iu_retention_run's rule that history leaves only in whole
// partitions that every route worker has passed.
package retention

import (
	"os"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
