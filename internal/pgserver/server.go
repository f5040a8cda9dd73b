package pgserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
)

// Kind says where a Server came from.
type Kind string

const (
	KindEnv       Kind = "TEST_DATABASE_URL"
	KindContainer Kind = "testcontainers"
	KindLocal     Kind = "local-binaries"
)

// Server is a running PostgreSQL a caller may create databases on.
type Server struct {
	Kind Kind
	// AdminURL connects to a maintenance database with a role that may create databases.
	AdminURL string

	stop    func(context.Context) error
	restart func(context.Context) error // nil unless Kind == KindLocal
	halt    func(context.Context) error // nil unless Kind == KindLocal
	resume  func(context.Context) error // nil unless Kind == KindLocal
}

// Stop stops what Start started (nothing for KindEnv).
func (s *Server) Stop(ctx context.Context) error {
	if s.stop == nil {
		return nil
	}
	return s.stop(ctx)
}

// CanRestart reports whether Restart is available (only for a local cluster).
func (s *Server) CanRestart() bool { return s.restart != nil }

// Restart stops and starts the server (fast shutdown), for tests of reconnect behaviour.
func (s *Server) Restart(ctx context.Context) error {
	if s.restart == nil {
		return fmt.Errorf("pgserver: restart is only supported for a %s server, this one is %s", KindLocal, s.Kind)
	}
	return s.restart(ctx)
}

// Halt stops a local server (fast shutdown) and keeps its data: clients see the database
// go away (their connections end, new ones are refused) until Resume starts it again. For
// tests of what a client does during an outage.
func (s *Server) Halt(ctx context.Context) error {
	if s.halt == nil {
		return fmt.Errorf("pgserver: halt is only supported for a %s server, this one is %s", KindLocal, s.Kind)
	}
	return s.halt(ctx)
}

// Resume starts a server that Halt stopped.
func (s *Server) Resume(ctx context.Context) error {
	if s.resume == nil {
		return fmt.Errorf("pgserver: resume is only supported for a %s server, this one is %s", KindLocal, s.Kind)
	}
	return s.resume(ctx)
}

// DBURL returns AdminURL pointed at another database.
func (s *Server) DBURL(dbname string) string { return withDatabase(s.AdminURL, dbname) }

// ErrNoServer means no PostgreSQL could be found or started.
var ErrNoServer = errors.New("no PostgreSQL available")

// Options tune Start.
type Options struct {
	// Env looks up environment variables (default os.Getenv); tests of the harness
	// itself swap it to prove the order of sources.
	Env func(string) string
	// SkipContainer disables the container source.
	SkipContainer bool
	// Container, when set, is tried after TEST_DATABASE_URL and before the local
	// binaries. It is a hook because the one implementation (testcontainers, in the test
	// harness) links the testing package, which a shipped binary must not.
	Container func(ctx context.Context) (*Server, error)
}

// NewServer wraps a server started elsewhere (the test harness's container); stop
// tears it down and may be nil.
func NewServer(kind Kind, adminURL string, stop func(context.Context) error) *Server {
	return &Server{Kind: kind, AdminURL: adminURL, stop: stop}
}

// Start finds or starts a server, in the order described in the package doc.
func Start(ctx context.Context, opts Options) (*Server, error) {
	env := opts.Env
	if env == nil {
		env = os.Getenv
	}
	if u := env("TEST_DATABASE_URL"); u != "" {
		return &Server{Kind: KindEnv, AdminURL: u}, nil
	}
	var reasons []string
	if !opts.SkipContainer && opts.Container != nil {
		s, err := opts.Container(ctx)
		if err == nil {
			return s, nil
		}
		reasons = append(reasons, "testcontainers: "+err.Error())
	}
	s, err := StartLocal(ctx)
	if err == nil {
		return s, nil
	}
	reasons = append(reasons, "local binaries: "+err.Error())
	hint := "set TEST_DATABASE_URL or install"
	if opts.Container != nil && !opts.SkipContainer {
		hint = "set TEST_DATABASE_URL, start a Docker daemon, or install"
	}
	return nil, fmt.Errorf("%w (%s the PostgreSQL server binaries, e.g. apt-get install postgresql):\n  %s",
		ErrNoServer, hint, strings.Join(reasons, "\n  "))
}

// BinDirEnv names the environment variable that points the local source at other server
// binaries (a directory holding initdb, pg_ctl and postgres), e.g. another major version.
const BinDirEnv = "PGTEST_BINDIR"

// StartLocal starts a throwaway cluster from the local PostgreSQL binaries: those in
// $PGTEST_BINDIR when it is set, else the ones findBinDir finds.
func StartLocal(ctx context.Context) (*Server, error) {
	bindir, err := LocalBinDir()
	if err != nil {
		return nil, err
	}
	return StartLocalAt(ctx, bindir)
}

// LocalBinDir is the directory of server binaries StartLocal uses: $PGTEST_BINDIR when it
// is set, else the one findBinDir finds.
func LocalBinDir() (string, error) {
	if bindir := os.Getenv(BinDirEnv); bindir != "" {
		return bindir, nil
	}
	return findBinDir()
}

// StartLocalAt starts a throwaway cluster from the server binaries in bindir (initdb,
// pg_ctl, postgres). Tests that need a particular major version start their own with it.
func StartLocalAt(ctx context.Context, bindir string) (*Server, error) {
	return StartLocalWith(ctx, bindir, LocalOptions{})
}

// LocalOptions shape a private cluster for a test that needs more than the defaults.
type LocalOptions struct {
	// Settings are extra `-c name=value` server settings, applied after the defaults.
	Settings []string
	// AddressSpaceBytes, when not zero, caps the virtual memory of the postmaster and so of
	// every backend it forks (prlimit --as): a backend that would grow past it fails with
	// "out of memory" (53200) instead of growing until the kernel kills it and PostgreSQL
	// restarts every session. Tests that feed the server hostile inputs run under it.
	AddressSpaceBytes uint64
}

// StartLocalWith is StartLocalAt with options.
func StartLocalWith(ctx context.Context, bindir string, lo LocalOptions) (*Server, error) {
	for _, b := range []string{"initdb", "pg_ctl", "postgres"} {
		if _, err := os.Stat(filepath.Join(bindir, b)); err != nil {
			return nil, fmt.Errorf("pgtest: %s has no %s: %w", bindir, b, err)
		}
	}
	dir, err := os.MkdirTemp("", "iu-pgtest-")
	if err != nil {
		return nil, fmt.Errorf("creating temp dir: %w", err)
	}
	run, err := runAsFor(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	data := filepath.Join(dir, "data")
	logf := filepath.Join(dir, "postgres.log")
	const port = 5432 // the socket lives in our own dir, so the port only names the file
	if out, err := run(ctx, filepath.Join(bindir, "initdb"), "-D", data, "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--no-sync"); err != nil { // no --no-instructions: PostgreSQL 13 lacks it
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w: %s", err, out)
	}
	settings := []string{
		"-k " + dir, "-p " + strconv.Itoa(port), "-c listen_addresses=''",
		"-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off",
		"-c max_connections=300", "-c shared_buffers=256MB",
	}
	for _, s := range lo.Settings {
		settings = append(settings, "-c "+s)
	}
	opts := strings.Join(settings, " ")
	pgctl := filepath.Join(bindir, "pg_ctl")
	startCmd := []string{pgctl, "-D", data, "-l", logf, "-w", "-t", "60", "-o", opts, "start"}
	if lo.AddressSpaceBytes > 0 {
		prlimit, err := exec.LookPath("prlimit")
		if err != nil {
			os.RemoveAll(dir)
			return nil, errors.New("a memory cap needs prlimit (util-linux), which is not installed")
		}
		startCmd = append([]string{prlimit, "--as=" + strconv.FormatUint(lo.AddressSpaceBytes, 10), "--"}, startCmd...)
	}
	start := func(ctx context.Context) error {
		if out, err := run(ctx, startCmd[0], startCmd[1:]...); err != nil {
			log, _ := os.ReadFile(logf)
			return fmt.Errorf("pg_ctl start: %w: %s\n%s", err, out, tail(log, 2000))
		}
		return nil
	}
	stop := func(ctx context.Context, mode string) error {
		if out, err := run(ctx, pgctl, "-D", data, "-m", mode, "-w", "stop"); err != nil {
			return fmt.Errorf("pg_ctl stop: %w: %s", err, out)
		}
		return nil
	}
	if err := start(ctx); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	u := &url.URL{Scheme: "postgres", User: url.User("postgres"), Path: "/postgres",
		RawQuery: url.Values{"host": {dir}, "port": {strconv.Itoa(port)}, "sslmode": {"disable"}}.Encode()}
	return &Server{
		Kind:     KindLocal,
		AdminURL: u.String(),
		stop: func(ctx context.Context) error {
			err := stop(ctx, "immediate")
			os.RemoveAll(dir)
			return err
		},
		restart: func(ctx context.Context) error {
			if err := stop(ctx, "fast"); err != nil {
				return err
			}
			return start(ctx)
		},
		halt:   func(ctx context.Context) error { return stop(ctx, "fast") },
		resume: start,
	}, nil
}

// findBinDir locates initdb and pg_ctl: PATH, then pg_config --bindir, then Debian's layout.
func findBinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "pg_ctl")); err == nil {
			return dir, nil
		}
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) > 0 {
		return filepath.Dir(matches[len(matches)-1]), nil
	}
	return "", errors.New("initdb not found on PATH, via pg_config --bindir, or under /usr/lib/postgresql/*/bin")
}

type runner func(ctx context.Context, name string, args ...string) (string, error)

// runAsFor returns a command runner. PostgreSQL refuses to run as root, so as root the
// commands run as the postgres OS user and dir is handed over to it.
func runAsFor(dir string) (runner, error) {
	plain := func(ctx context.Context, name string, args ...string) (string, error) {
		var buf bytes.Buffer
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Stdout, cmd.Stderr = &buf, &buf
		err := cmd.Run()
		return buf.String(), err
	}
	if os.Geteuid() != 0 {
		return plain, nil
	}
	pg, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.New("running as root and there is no postgres OS user to run the cluster as")
	}
	uid, _ := strconv.Atoi(pg.Uid)
	gid, _ := strconv.Atoi(pg.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return nil, fmt.Errorf("handing %s to postgres: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	runuser, err := exec.LookPath("runuser")
	if err != nil {
		return nil, errors.New("running as root and runuser is not installed (util-linux)")
	}
	return func(ctx context.Context, name string, args ...string) (string, error) {
		return plain(ctx, runuser, append([]string{"-u", "postgres", "--", name}, args...)...)
	}, nil
}

func withDatabase(rawURL, dbname string) string {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		// keyword=value form
		return rawURL + " dbname=" + dbname
	}
	u.Path = "/" + dbname
	return u.String()
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
