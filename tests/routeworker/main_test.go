// Package routeworker holds the integration tests of the route worker (migrations 008 and
// 009) against a real PostgreSQL: one test per rule of the route worker and its cursor, each named in a
// comment, and each written so that it fails when its rule breaks.
package routeworker

import (
	"os"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
