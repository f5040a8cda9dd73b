// Package pgtest gives every test a real, freshly migrated PostgreSQL database.
//
// Where the server comes from, in order:
//
//  1. TEST_DATABASE_URL, when set: an existing server (the role needs CREATEDB and
//     CREATEROLE, or superuser, because the migrations create the package's group roles).
//  2. A testcontainers-go PostgreSQL, when a Docker daemon answers.
//  3. A throwaway cluster started from the local binaries: initdb + pg_ctl on a unix
//     socket in a temp dir, fsync off. The binaries are found on PATH, then through
//     `pg_config --bindir`, then under /usr/lib/postgresql/*/bin; PGTEST_BINDIR, when set,
//     names another directory of server binaries to use instead (another major version;
//     StartLocalAt starts a private cluster from any such directory). Run as root, the
//     cluster is owned by and run as the `postgres` OS user (PostgreSQL refuses root).
//
// When none can be had the run fails with a clear message if CI is set, and is skipped
// with the reason otherwise; a CI run never passes without a database.
//
// The server starts on the first NewDB call of a test process (a package whose selected
// tests need no database starts none), and the embedded migrations are applied once per
// process into a template database;
// each test then gets its own database cloned from it (CREATE DATABASE ... TEMPLATE), so
// tests run in parallel without seeing each other's rows. The cluster (or container) is
// stopped when the process ends.
//
// Typical use:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		t.Parallel()
//		db := pgtest.NewDB(t) // *pgtest.DB: DSN, Pool, helpers
//		...
//	}
package pgtest
