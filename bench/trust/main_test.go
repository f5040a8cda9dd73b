// Package trust measures what the trust-boundary rules cost, against a real PostgreSQL:
//
//	go test -run '^$' -bench . ./bench/trust/
//
// Each figure is a median of interleaved repetitions of the subject and its baseline,
// measured server-side (clock_timestamp around a loop), reported with their ratio.
package trust

import (
	"os"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
