// Package queuehealth holds the integration tests of the queue-health layer:
// heartbeats, the cut ping, the stale-check, the NOTIFY bridge and v_queue_health, each
// against its own freshly migrated PostgreSQL database. The job queue's tests are in
// tests/jobqueue.
package queuehealth

import (
	"os"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
