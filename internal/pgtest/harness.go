package pgtest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/iu-core/event-worker/internal/migrate"
)

// UpgradeFromEnv names a directory of released goose migrations (a version of sql/iu-core
// extracted with git archive: make test-upgrade). When it is set, the template database is
// that release's install upgraded to this version, and every test database is a clone of it.
const UpgradeFromEnv = "PGTEST_UPGRADE_FROM"

// Harness owns a server and a migrated template database, and clones test databases.
type Harness struct {
	Server   *Server
	template string
	prefix   string
	seq      atomic.Int64
	mu       sync.Mutex // CREATE DATABASE ... TEMPLATE: one clone at a time keeps it simple
}

// NewHarness starts (or finds) a server and migrates a fresh template database on it.
func NewHarness(ctx context.Context, opts Options) (*Harness, error) {
	srv, err := Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	h := &Harness{Server: srv, prefix: fmt.Sprintf("iu_t%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)}
	h.template = h.prefix + "_tpl"
	if err := h.exec(ctx, "CREATE DATABASE "+pgx.Identifier{h.template}.Sanitize()); err != nil {
		srv.Stop(ctx)
		return nil, fmt.Errorf("creating template database: %w", err)
	}
	// The install's precondition, as a DBA applies it: on PostgreSQL 13/14 PUBLIC may CREATE
	// in public by default, and the package refuses to install while it can (a no-op on 15+).
	if err := execOn(ctx, srv.DBURL(h.template), "REVOKE CREATE ON SCHEMA public FROM PUBLIC"); err != nil {
		h.Close(ctx)
		return nil, fmt.Errorf("closing schema public of the template database: %w", err)
	}
	// The upgrade mode: the template is a released version's install upgraded to this one,
	// so a whole test package runs on an upgraded database instead of a fresh one.
	if dir := os.Getenv(UpgradeFromEnv); dir != "" {
		if err := migrate.UpFS(ctx, srv.DBURL(h.template), os.DirFS(dir)); err != nil {
			h.Close(ctx)
			return nil, fmt.Errorf("installing the release in %s (%s) into the template database: %w", dir, UpgradeFromEnv, err)
		}
	}
	if err := migrate.Up(ctx, srv.DBURL(h.template)); err != nil {
		h.Close(ctx)
		return nil, fmt.Errorf("migrating template database: %w", err)
	}
	return h, nil
}

// Close drops the template and stops the server.
func (h *Harness) Close(ctx context.Context) {
	_ = h.exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{h.template}.Sanitize()+" WITH (FORCE)")
	_ = h.Server.Stop(ctx)
}

// CreateDB clones the template into a new database and returns its name.
// emptyDB makes a database without migrations (for migration tests).
func (h *Harness) CreateDB(ctx context.Context, migrated bool) (string, error) {
	name := fmt.Sprintf("%s_%d", h.prefix, h.seq.Add(1))
	stmt := "CREATE DATABASE " + pgx.Identifier{name}.Sanitize()
	if migrated {
		stmt += " TEMPLATE " + pgx.Identifier{h.template}.Sanitize()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.exec(ctx, stmt); err != nil {
		return "", fmt.Errorf("creating database %s: %w", name, err)
	}
	if !migrated { // the install's precondition (see NewHarness); clones inherit it
		if err := execOn(ctx, h.Server.DBURL(name), "REVOKE CREATE ON SCHEMA public FROM PUBLIC"); err != nil {
			return "", fmt.Errorf("closing schema public of %s: %w", name, err)
		}
	}
	return name, nil
}

// DropDB drops a database, terminating its sessions.
func (h *Harness) DropDB(ctx context.Context, name string) error {
	return h.exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

func (h *Harness) exec(ctx context.Context, sql string) error {
	if err := execOn(ctx, h.Server.AdminURL, sql); err != nil {
		return fmt.Errorf("on the %s server: %w", h.Server.Kind, err)
	}
	return nil
}

func execOn(ctx context.Context, url, sql string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// DB is one test's database.
type DB struct {
	Name string
	URL  string
	Pool *pgxpool.Pool
	h    *Harness
}

// Harness returns the harness the database belongs to (for server-level operations).
func (d *DB) Harness() *Harness { return d.h }

// Conn opens a dedicated connection (a separate session), closed at test end.
func (d *DB) Conn(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, d.URL)
	if err != nil {
		t.Fatalf("pgtest: connecting to %s: %v", d.Name, err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// ConnAs opens a session that logs in as role (with password, for servers that check one),
// closed at test end. Unlike SET ROLE on the harness's superuser session, session_user is
// role: what a real executor or producer login looks like to the package.
func (d *DB) ConnAs(t testing.TB, role, password string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(d.URL)
	if err != nil {
		t.Fatalf("pgtest: parsing %s: %v", d.Name, err)
	}
	cfg.User, cfg.Password = role, password
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: connecting to %s as %s: %v", d.Name, role, err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// Exec runs statements on the pool and fails the test on error.
func (d *DB) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	if _, err := d.Pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("pgtest: exec %q: %v", abbreviate(sql), err)
	}
}

// QueryRow scans one row and fails the test on error.
func (d *DB) QueryRow(t testing.TB, sql string, args []any, dest ...any) {
	t.Helper()
	if err := d.Pool.QueryRow(context.Background(), sql, args...).Scan(dest...); err != nil {
		t.Fatalf("pgtest: query %q: %v", abbreviate(sql), err)
	}
}

// WaitUntil polls a query of one boolean every 25 ms until it answers true, and fails the
// test when it has not within the timeout. For a state another session must reach first (a
// backend waiting on a lock, a clock passing a moment): a condition waited for, never a
// sleep that hopes.
func (d *DB) WaitUntil(t testing.TB, timeout time.Duration, sql string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var ok bool
		d.QueryRow(t, sql, args, &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgtest: still false after %s: %q", timeout, abbreviate(sql))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func abbreviate(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// NewDBOn creates a database on h for t, dropped when t ends.
func (h *Harness) NewDBOn(t testing.TB, migrated bool) *DB {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	name, err := h.CreateDB(ctx, migrated)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	url := h.Server.DBURL(name)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("pgtest: connecting to %s: %v", name, err)
	}
	t.Cleanup(func() {
		pool.Close()
		dctx, dcancel := context.WithTimeout(context.Background(), time.Minute)
		defer dcancel()
		if err := h.DropDB(dctx, name); err != nil {
			t.Logf("pgtest: dropping %s: %v", name, err)
		}
	})
	return &DB{Name: name, URL: url, Pool: pool, h: h}
}

// process is the harness of this test process, started by the first NewDB call and
// stopped by Main. Test helpers reach it through NewDB so a test body stays one line; it
// is the only package-level state and exists only in test binaries. Starting lazily
// means a package whose selected tests need no database (a benchmark package under
// `go test ./...`) starts no server.
var process struct {
	once sync.Once
	h    *Harness
	err  error
}

// Main runs the tests and stops the harness if any test started it. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
func Main(m *testing.M) int {
	code := m.Run()
	if process.h != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		process.h.Close(ctx)
		cancel()
	}
	return code
}

// Current returns the process harness, starting it if needed.
func Current() (*Harness, error) {
	process.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		process.h, process.err = NewHarness(ctx, Options{})
	})
	return process.h, process.err
}

// NewDB gives t its own migrated database.
func NewDB(t testing.TB) *DB {
	t.Helper()
	return harnessFor(t).NewDBOn(t, true)
}

// NewEmptyDB gives t its own database with no migrations applied.
func NewEmptyDB(t testing.TB) *DB {
	t.Helper()
	return harnessFor(t).NewDBOn(t, false)
}

// harnessFor fails t when no server can be had and CI is set (a CI run never passes
// without a database), and skips it with the reason otherwise.
func harnessFor(t testing.TB) *Harness {
	t.Helper()
	h, err := Current()
	if err != nil {
		Unavailable(t, "pgtest: no PostgreSQL: %v", err)
	}
	return h
}
