// Package cli is iu-runner's command line: subcommand dispatch, flags, exit codes. The
// binary's main is a one-liner around Main, and the demo (cmd/iu-demo) calls Main
// in-process, so what the demo shows is exactly what operators run.
//
//	iu-runner migrate up|down|status|version   goose over the embedded sql/iu-core
//	iu-runner tick                              one pass, one JSON summary on stdout (cron)
//	iu-runner run                               the long-running loop (systemd, Kubernetes)
//	iu-runner health                            v_queue_health as a table or --json
//
// Exit codes, for every subcommand:
//
//	0  success (a gated no-op and a busy worker are success)
//	1  failure: the database is unreachable, a SQL call failed (one clear line on stderr)
//	2  usage error: unknown subcommand or flag, bad flag value
//	3  health only: something is stale, critical or has open dead letters
//
// Every subcommand takes --help, and the connection flags of package config
// (--database-url over DATABASE_URL over PG*; --statement-timeout; --connect-timeout).
// Logs are JSON (log/slog) on stderr; results go to stdout.
package cli
