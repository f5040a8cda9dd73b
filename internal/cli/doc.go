// Package cli is iu-runner's command line: subcommand dispatch, flags, exit codes. The
// binary's main is a one-liner around Main, and the demo (cmd/iu-demo) calls Main
// in-process, so what the demo shows is exactly what operators run.
//
//	iu-runner migrate plan|up|down|status|check|version   goose over the embedded sql/iu-core
//	iu-runner tick                              one pass, one JSON summary on stdout (cron)
//	iu-runner run                               the long-running loop (systemd, Kubernetes)
//	iu-runner health                            v_queue_health as a table or --json
//	iu-runner version (or --version)            module version and VCS revision (package buildinfo)
//	iu-runner help [command]                    the usage, or a command's flags
//
// Exit codes, for every subcommand:
//
//	0  success (a gated no-op and a busy worker are success)
//	1  failure: the database is unreachable, a SQL call failed (one JSON error record on stderr)
//	2  usage error: unknown subcommand or flag, bad flag value
//	3  health: something is stale, critical or has open dead letters, an executor beats with
//	   status error or has been paused longer than --paused-grace, or a closed gate has kept
//	   events waiting longer than --gated-grace;
//	   migrate status and migrate check: migrations are pending (a deploy can gate on it)
//
// Every subcommand takes --help, and the connection flags of package config
// (--database-url or --database-url-file over DATABASE_URL or DATABASE_URL_FILE over PG*;
// a password given with --database-url is warned about at start; --connect-timeout; for
// tick, run and health also --statement-timeout, --call-timeout and --max-conns).
// Logs are JSON (log/slog) on stderr, one object per line, errors included: a failure is
// {"level":"ERROR","msg":"iu-runner <cmd>: error","error":"...","exit_code":1} (plus
// sqlstate and hint from PostgreSQL), a usage error is "iu-runner <cmd>: usage error" with
// exit_code 2 (the bare command and an unknown one also print the usage text after it).
// Results go to stdout. The first SIGINT/SIGTERM drains (run) or stops between batches
// (tick); a second one ends the process at once (cmd/iu-runner restores the default
// handlers after the first).
package cli
