// Package config turns iu-runner's flags and environment into a database connection
// configuration.
//
// # Where the database comes from
//
// One rule, applied in this order (the first level that is set wins):
//
//  1. the flags: --database-url, or --database-url-file (a file holding the connection
//     string); giving both is a usage error;
//  2. the environment: DATABASE_URL, or DATABASE_URL_FILE (a file, as for the flag);
//     setting both is refused (exit 1), since which one was meant cannot be guessed;
//  3. the libpq environment variables (PGHOST, PGPORT, PGDATABASE, PGUSER, PGPASSWORD,
//     PGSSLMODE, PGSERVICE, PGPASSFILE, ...), read by pgx exactly as libpq reads them.
//
// So a file variant stands at its level, next to its value variant: --database-url-file
// beats DATABASE_URL, and DATABASE_URL_FILE beats the PG* variables. As with libpq, a
// connection string given by 1 or 2 is still completed by the PG* variables for the parts
// it leaves out (postgres:///mydb with PGHOST=/run/postgresql connects over that socket; a
// URL without a password takes it from PGPASSFILE or PGPASSWORD): the connection string
// wins for every parameter it names. Resolve reports which source was used, and the
// runner logs it at start-up, so "which database did it talk to?" is never a guess. The
// rule is tested in config_test.go and, end to end against the real binary, in
// tests/runner (TestConfigPrecedence).
//
// # Passwords
//
// A password in --database-url is readable by every local user (ps, /proc/<pid>/cmdline)
// for as long as the runner runs: it still works, but the runner logs a WARN at start
// (PasswordOnCommandLine; the line shows the connection string with the password masked).
// Keep it out of the command line: in a connection string file (--database-url-file,
// DATABASE_URL_FILE; Kubernetes secret volumes and systemd credentials are such files),
// in a libpq password file (PGPASSFILE), or in the environment (DATABASE_URL, PGPASSWORD),
// which only the runner's own user and root can read.
//
// A connection string file (ReadSecretFile) follows libpq's rules for its own secret
// files: a regular file (symlinks followed), no access for other users, and group read
// only when root owns the file (0640; a Kubernetes secret volume with fsGroup gives 0440
// owned by root); a looser file is refused with its mode and the chmod that fixes it,
// before anything connects. Surrounding whitespace (the trailing newline) is trimmed; an
// empty file, several lines or a shell assignment are refused. No error quotes the file.
// Every error that quotes a connection string masks its passwords (redact.go).
//
// # What every connection gets
//
//   - application_name=iu-runner (unless the URL sets one), so operators can find the
//     runner's sessions in pg_stat_activity and terminate them by name;
//   - statement_timeout (default 30s, --statement-timeout), so a stuck statement cannot pin
//     a connection forever. The default is sent only when the connection string sets none:
//     a statement_timeout given there (?statement_timeout=5000, or
//     options=-c statement_timeout=5s) is kept; --statement-timeout given explicitly wins
//     over it. It travels as a startup parameter; PgBouncer refuses unknown startup
//     parameters, so behind PgBouncer either list it in ignore_startup_parameters or pass
//     --statement-timeout 0 (not sent) and ALTER ROLE ... SET statement_timeout;
//   - a client-side deadline on every call (--call-timeout; by default the effective
//     statement timeout + 5s, or 60s when none is set): the server's timeout fires first,
//     the client deadline only catches a connection that stopped answering (a half-open
//     TCP session after a partition), which would otherwise hang the runner;
//   - a context watcher that sends a cancel request when a call's context ends
//     (pgconn.CancelRequestContextWatcherHandler, 2s before the socket deadline), so a call
//     cancelled by the shutdown grace or its deadline really stops on the server and its
//     transaction rolls back;
//   - a connect timeout (default 10s, --connect-timeout) when the URL has none, so an
//     unreachable database fails fast with a clear error instead of hanging cron;
//   - the simple-protocol-compatible exec mode (no named prepared statements), so the
//     runner works behind PgBouncer in transaction pooling mode.
//
// --max-conns (default 4) bounds the pool. `run` in hybrid or notify mode holds one more
// connection, the LISTEN session, taken out of the pool (so up to --max-conns + 1 in all).
// migrate takes only --database-url, --database-url-file and --connect-timeout: it uses one
// connection of its own, and flags it would ignore are not registered.
package config
