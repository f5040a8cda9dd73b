package retention

import (
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule: partitioning, the conversion and retention work on PostgreSQL 13, the oldest
// supported version (its run-time partition pruning refuses some query shapes that 15
// accepts: this found one). The core scenarios run on a PostgreSQL 13 cluster: retention,
// the conversion, and maintenance catching up from behind (a default partition detached and
// attached as a range partition).
func TestRetention_PostgreSQL13(t *testing.T) {
	t.Parallel()
	h := pgtest.MajorHarness(t, 13)
	t.Run("retention", func(t *testing.T) { dropsOnlyWhatEveryCursorPassed(t, setupOn(t, h.NewDBOn(t, true))) })
	t.Run("conversion", func(t *testing.T) { conversionKeepsEveryRowAndCursor(t, h.NewDBOn(t, true)) })
	t.Run("default_caught_up", func(t *testing.T) { defaultPartitionCatchesWhatMaintenanceMissed(t, setupOn(t, h.NewDBOn(t, true))) })
}
