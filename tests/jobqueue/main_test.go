// Package jobqueue holds the integration tests of the lease-based job queue: enqueue (one
// and many, deduplicated), the claim and its plan, the lease fenced by a token (complete,
// fail, extend, one and many), backoff and dead letters, the reaper, pruning, paused
// kinds, the bulk replay and the grant matrix of fn_job_*, each against its own freshly
// migrated PostgreSQL database.
package jobqueue

import (
	"os"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
