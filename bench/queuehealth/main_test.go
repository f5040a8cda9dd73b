// Package queuehealth benchmarks the queue-health layer against a real PostgreSQL:
//
//	go test -run '^$' -bench . ./bench/queuehealth/
//
// Each benchmark measures its subject and a baseline over the same data in the same run,
// and reports both (ms per operation) and their ratio, so the figures mean something on
// any machine. Budgets from the issue are checked: v_queue_health and the stale-check
// <= 100 ms at the sizes below.
package queuehealth

import (
	"os"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
