// Package river compares the job queue with River (github.com/riverqueue/river), the
// best-known PostgreSQL job queue for Go, on the same throwaway PostgreSQL cluster:
//
//	make bench          (or: cd bench/river && go test -run '^$' -bench . -benchtime 1x)
//
// It is its own Go module so River and its dependencies never enter the product's go.mod;
// it reuses the product's internal/pgtest (a replace directive) for the cluster and the
// migrated database. See the benchmark's doc comment for what is measured and how.
package river

import (
	"os"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
