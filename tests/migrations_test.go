package tests

import (
	"context"
	"database/sql"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"

	"github.com/iu-core/event-worker/internal/migrate"
	"github.com/iu-core/event-worker/internal/pgtest"
)

// objectCount counts what the package leaves in a database: its schema iu_core, and the
// relations, functions and types in public, the version table excluded.
func objectCount(t *testing.T, db *pgtest.DB) int {
	t.Helper()
	var n int
	db.QueryRow(t, `
		SELECT (SELECT count(*) FROM pg_namespace WHERE nspname = 'iu_core')
		     + (SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace
		           AND relname NOT LIKE 'iu_core_db_version%')
		     + (SELECT count(*) FROM pg_proc WHERE pronamespace = 'public'::regnamespace)
		     + (SELECT count(*) FROM pg_type WHERE typnamespace = 'public'::regnamespace
		           AND typrelid = 0 AND typelem = 0)`, nil, &n)
	return n
}

// Rule: every migration has a Down that really undoes it: up, down to zero, up again.
func TestMigrations_UpDownUp(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmptyDB(t)
	m, err := migrate.Open(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	if _, err := m.Up(ctx(t)); err != nil {
		t.Fatal(err)
	}
	latest, err := m.Version(ctx(t))
	if err != nil || latest < 8 {
		t.Fatalf("version after up = %d, %v", latest, err)
	}
	if n := objectCount(t, db); n == 0 {
		t.Fatal("up created nothing")
	}
	// Down one step at a time, so each Down runs against exactly the state its Up left,
	// until version 0 (the numbers need not be contiguous: 014, then 017, 020). Bounded by
	// the latest version, which is at least the number of migrations.
	for steps := int64(0); ; steps++ {
		v, err := m.Version(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		if v == 0 {
			break
		}
		if steps > latest {
			t.Fatalf("still at version %d after %d downs", v, steps)
		}
		if _, err := m.Down(ctx(t)); err != nil {
			t.Fatalf("down from %d: %v", v, err)
		}
	}
	if n := objectCount(t, db); n != 0 {
		t.Fatalf("down to zero left %d objects behind", n)
	}
	if _, err := m.Up(ctx(t)); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if v, _ := m.Version(ctx(t)); v != latest {
		t.Fatalf("version after second up = %d, want %d", v, latest)
	}
}

// Rule: the plain goose code path (a Provider over the sql/iu-core directory with the
// package's version table) migrates up, down to zero and up again.
func TestMigrations_PlainGooseDirectory(t *testing.T) {
	t.Parallel()
	db := pgtest.NewEmptyDB(t)
	sqldb := openSQL(t, db.URL)
	store, err := database.NewStore(database.DialectPostgres, migrate.VersionTable)
	if err != nil {
		t.Fatal(err)
	}
	p, err := goose.NewProvider("", sqldb, osDir("../sql/iu-core"), goose.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	for i, step := range []func(context.Context) error{
		func(c context.Context) error { _, err := p.Up(c); return err },
		func(c context.Context) error { _, err := p.DownTo(c, 0); return err },
		func(c context.Context) error { _, err := p.Up(c); return err },
	} {
		if err := step(ctx(t)); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
}

// Rule: roles are cluster-wide; two databases of one cluster migrate (concurrently, too),
// and taking one down leaves the other's roles and grants working.
func TestMigrations_TwoDatabasesOneCluster(t *testing.T) {
	t.Parallel()
	a, b := pgtest.NewEmptyDB(t), pgtest.NewEmptyDB(t)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, db := range []*pgtest.DB{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = migrate.Up(ctx(t), db.URL)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("database %d: %v", i, err)
		}
	}
	m, err := migrate.Open(a.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.DownTo(ctx(t), 0); err != nil {
		t.Fatalf("down a: %v", err)
	}
	var can bool
	b.QueryRow(t, `SELECT has_function_privilege('dot_executor', 'fn_iu_emit_event(text,text,text,text,text,text,text,jsonb)', 'EXECUTE')`, nil, &can)
	if !can {
		t.Fatal("database b lost dot_executor's grant when database a went down")
	}
	if err := migrate.Up(ctx(t), a.URL); err != nil {
		t.Fatalf("up a again: %v", err)
	}
}

func openSQL(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

var _ = stdlib.GetDefaultDriver // registers the "pgx" database/sql driver

// Rule: `goose -table iu_core_db_version -dir sql/iu-core postgres "$DSN" up`, then
// `reset`, then `up` again works with the plain goose CLI, and goose_db_version is never
// created. make test builds the CLI and sets GOOSE_BIN; a plain
// `go test` without it skips, but CI (CI set) must have it.
func TestMigrations_PlainGooseCLI(t *testing.T) {
	t.Parallel()
	bin := os.Getenv("GOOSE_BIN")
	if bin == "" {
		pgtest.Unavailable(t, "GOOSE_BIN not set: run the tests through make test to exercise the goose CLI")
	}
	db := pgtest.NewEmptyDB(t)
	for _, cmd := range []string{"up", "reset", "up", "status"} {
		out, err := exec.CommandContext(ctx(t), bin, "-table", migrate.VersionTable, "-dir", "../sql/iu-core", "postgres", db.URL, cmd).CombinedOutput()
		if err != nil {
			t.Fatalf("goose %s: %v\n%s", cmd, err, out)
		}
	}
	var n int
	db.QueryRow(t, `SELECT count(*) FROM pg_proc WHERE proname = 'fn_iu_emit_event'`, nil, &n)
	if n != 1 {
		t.Fatal("goose CLI up did not leave fn_iu_emit_event behind")
	}
	db.QueryRow(t, `SELECT count(*) FROM pg_class WHERE relname = 'goose_db_version'`, nil, &n)
	if n != 0 {
		t.Fatal("the package's migrations created goose_db_version")
	}
}

// Rule: the package keeps its own version history (iu_core_db_version) and never reads or
// writes goose_db_version. A database whose own project migrates with goose, with a dense
// history (1..53: every package version "applied" if the tables were shared, so up would
// apply nothing) or a sparse one (2, 8, 9, 52, 53: "missing out-of-order migrations"),
// installs the package in full, and its goose_db_version is byte for byte as it was.
func TestMigrations_OwnVersionTableLeavesTheProjectsGooseHistory(t *testing.T) {
	t.Parallel()
	for name, versions := range map[string]string{"dense": "generate_series(1, 53)", "sparse": "unnest(ARRAY[2, 8, 9, 52, 53])"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := pgtest.NewEmptyDB(t)
			db.Exec(t, `CREATE TABLE goose_db_version (id serial PRIMARY KEY, version_id bigint NOT NULL,
			                is_applied boolean NOT NULL, tstamp timestamp DEFAULT now());
			            INSERT INTO goose_db_version (version_id, is_applied) VALUES (0, true);
			            INSERT INTO goose_db_version (version_id, is_applied, tstamp)
			            SELECT v, true, '2025-01-01'::timestamp + v * interval '1 day' FROM `+versions+` v`)
			history := func() string {
				var h string
				db.QueryRow(t, `SELECT string_agg(format('%s/%s/%s/%s', id, version_id, is_applied, tstamp), ',' ORDER BY id) FROM goose_db_version`, nil, &h)
				return h
			}
			before := history()
			m, err := migrate.Open(db.URL)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			res, err := m.Up(ctx(t))
			if err != nil {
				t.Fatalf("install beside the project's own goose history: %v", err)
			}
			files, _ := os.ReadDir("../sql/iu-core")
			var want int
			for _, f := range files {
				if strings.HasSuffix(f.Name(), ".sql") {
					want++
				}
			}
			if len(res) != want {
				t.Fatalf("applied %d migrations, want all %d", len(res), want)
			}
			if got := history(); got != before {
				t.Fatalf("goose_db_version changed:\nbefore %s\nafter  %s", before, got)
			}
			if _, err := m.DownTo(ctx(t), 0); err != nil {
				t.Fatalf("down to zero: %v", err)
			}
			if got := history(); got != before {
				t.Fatalf("goose_db_version changed by the rollback")
			}
		})
	}
}

// Rule (a Down that really undoes, roles are cluster-wide): taking the package down
// must not silently strip operators of their membership in the group roles. On a private
// cluster (where no other database holds grants that would block the drop anyway), a role
// with members is kept by the Down of 001_iu_core_schema.sql, so down-to-zero then up leaves the operator's access.
func TestMigrations_DownKeepsRoleMemberships(t *testing.T) {
	t.Parallel()
	srv, err := pgtest.StartLocal(ctx(t))
	if err != nil {
		pgtest.Unavailable(t, "no local PostgreSQL binaries: %v", err)
	}
	t.Cleanup(func() { srv.Stop(context.Background()) })
	url := srv.DBURL("postgres")
	sqldb := openSQL(t, url)
	// The install's precondition (PostgreSQL 13/14 let PUBLIC create in public by default).
	if _, err := sqldb.ExecContext(ctx(t), `REVOKE CREATE ON SCHEMA public FROM PUBLIC`); err != nil {
		t.Fatal(err)
	}
	m, err := migrate.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.Up(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := sqldb.ExecContext(ctx(t), `CREATE ROLE iu_operator LOGIN; GRANT workflow_admin TO iu_operator`); err != nil {
		t.Fatal(err)
	}
	if _, err := m.DownTo(ctx(t), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx(t)); err != nil {
		t.Fatal(err)
	}
	var member bool
	if err := sqldb.QueryRowContext(ctx(t), `SELECT pg_has_role('iu_operator', 'workflow_admin', 'MEMBER')`).Scan(&member); err != nil {
		t.Fatal(err)
	}
	if !member {
		t.Fatal("down to zero and up again removed iu_operator from workflow_admin")
	}
}
