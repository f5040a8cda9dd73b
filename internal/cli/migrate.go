package cli

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/jackc/pgx/v5"
	"github.com/pressly/goose/v3"

	"github.com/iu-core/event-worker/internal/config"
	"github.com/iu-core/event-worker/internal/migrate"
)

func runMigrate(ctx context.Context, args []string, env Env) int {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	var c common
	c.register(fs, "warn", false)
	to := fs.Int64("to", -1, "down: roll back to this version (0 undoes everything) instead of one step")
	width := fs.Int64("partition-txids", 0, "up: the history partition width in transaction ids for the partitioning migration (1000..10^12; 0: the key retention.partition_txids or 100000000)")
	synopsis := "iu-runner migrate up|down|status|check|version [flags]\n\n" +
		"Applies the migrations embedded in the binary (the same files as sql/iu-core) with goose,\n" +
		"holding goose's PostgreSQL session lock, so two deploys never migrate at once.\n" +
		"  up       apply every pending migration (--partition-txids N: the history partition\n" +
		"           width the partitioning migration installs)\n" +
		"  down     roll back the newest migration (or to --to N)\n" +
		"  status   list migrations and whether each is applied; exit 3 while any is pending\n" +
		"  check    one line: up to date (exit 0) or how many are pending (exit 3); gates a deploy\n" +
		"  version  print the database's current version\n" +
		"Exit codes: 0 ok, 1 failure, 2 usage error, 3 migrations pending (status, check)."
	// the action may come before or after the flags
	var action string
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		action, args = args[0], args[1:]
	}
	if code, done := parse(fs, args, env, synopsis); done {
		return code
	}
	if action == "" && fs.NArg() > 0 {
		action = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return usageErr(env, "migrate", "unexpected argument %q", fs.Arg(0))
	}
	switch action {
	case "up", "down", "status", "check", "version":
	case "":
		return usageErr(env, "migrate", "missing action: up, down, status, check or version")
	default:
		return usageErr(env, "migrate", "unknown action %q: want up, down, status, check or version", action)
	}
	if err := c.db.Validate(); err != nil {
		return usageErr(env, "migrate", "%v", err)
	}
	log, err := c.logger(env)
	if err != nil {
		return usageErr(env, "migrate", "%v", err)
	}
	c.warnPassword(log)
	dsn, src, err := c.db.DSN(env.Getenv)
	if err != nil {
		return fail(env, "migrate", err)
	}
	cc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fail(env, "migrate", fmt.Errorf("parsing database settings from %s: %w", src, config.RedactErr(err, dsn)))
	}
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = c.db.ConnectTimeout
	}
	if *width != 0 {
		if action != "up" {
			return usageErr(env, "migrate", "--partition-txids applies to up only")
		}
		if *width < 1000 || *width > 1_000_000_000_000 {
			return usageErr(env, "migrate", "--partition-txids %d: want 1000 to 1000000000000", *width)
		}
		// the partitioning migration reads it (and writes it to dot_config)
		cc.RuntimeParams[migrate.PartitionTxidsSetting] = strconv.FormatInt(*width, 10)
	}
	m, err := migrate.OpenConfig(cc)
	if err != nil {
		return fail(env, "migrate", err)
	}
	defer m.Close()
	switch action {
	case "up":
		res, err := m.Up(ctx)
		for _, r := range res {
			fmt.Fprintf(env.Stdout, "applied %s (%s)\n", r.Source.Path, r.Duration.Round(1e6))
		}
		if err != nil {
			return fail(env, "migrate", err)
		}
		v, err := m.Version(ctx)
		if err != nil {
			return fail(env, "migrate", err)
		}
		fmt.Fprintf(env.Stdout, "database at version %d (%d applied now)\n", v, len(res))
	case "down":
		if *to >= 0 {
			res, err := m.DownTo(ctx, *to)
			for _, r := range res {
				fmt.Fprintf(env.Stdout, "rolled back %s\n", r.Source.Path)
			}
			if err != nil {
				return fail(env, "migrate", err)
			}
		} else {
			r, err := m.Down(ctx)
			if r != nil {
				fmt.Fprintf(env.Stdout, "rolled back %s\n", r.Source.Path)
			}
			if err != nil {
				return fail(env, "migrate", err)
			}
		}
		v, err := m.Version(ctx)
		if err != nil {
			return fail(env, "migrate", err)
		}
		fmt.Fprintf(env.Stdout, "database at version %d\n", v)
	case "status":
		st, err := m.Status(ctx)
		if err != nil {
			return fail(env, "migrate", err)
		}
		tw := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "VERSION\tSTATE\tAPPLIED AT\tFILE")
		for _, s := range st {
			at := "-"
			if !s.AppliedAt.IsZero() {
				at = s.AppliedAt.UTC().Format("2006-01-02 15:04:05Z")
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", s.Source.Version, s.State, at, s.Source.Path)
		}
		tw.Flush()
		if n := pending(st); n > 0 {
			fmt.Fprintf(env.Stdout, "%d migration(s) pending: run iu-runner migrate up\n", n)
			return ExitProblem
		}
	case "check":
		st, err := m.Status(ctx)
		if err != nil {
			return fail(env, "migrate", err)
		}
		v, err := m.Version(ctx)
		if err != nil {
			return fail(env, "migrate", err)
		}
		if n := pending(st); n > 0 {
			fmt.Fprintf(env.Stdout, "database at version %d: %d migration(s) pending (latest %d): run iu-runner migrate up\n", v, n, latest(st))
			return ExitProblem
		}
		fmt.Fprintf(env.Stdout, "database at version %d: up to date\n", v)
	case "version":
		v, err := m.Version(ctx)
		if err != nil {
			return fail(env, "migrate", err)
		}
		fmt.Fprintln(env.Stdout, v)
	}
	return ExitOK
}

// pending counts the embedded migrations the database has not applied.
func pending(st []*goose.MigrationStatus) int {
	n := 0
	for _, s := range st {
		if s.State == goose.StatePending {
			n++
		}
	}
	return n
}

// latest is the newest embedded migration's version.
func latest(st []*goose.MigrationStatus) int64 {
	var v int64
	for _, s := range st {
		v = max(v, s.Source.Version)
	}
	return v
}
