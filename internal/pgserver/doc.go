// Package pgserver finds or starts a PostgreSQL server to create throwaway databases on:
// the one behind TEST_DATABASE_URL when it is set, else (through an optional hook) a
// container, else a throwaway cluster started from the local server binaries (initdb +
// pg_ctl on a unix socket in a temp dir, fsync off; the binaries are found on PATH, then
// through `pg_config --bindir`, then under /usr/lib/postgresql/*/bin; run as root, the
// cluster is owned by and run as the `postgres` OS user, because PostgreSQL refuses root).
//
// It does not import the testing package, so a shipped binary (cmd/iu-demo) can use it;
// the test harness (internal/pgtest) builds on it and adds the testcontainers source.
package pgserver
