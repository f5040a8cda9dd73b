package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
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
	dropHistory := fs.Bool("drop-history", false, "down: drop the package's tables even when they hold rows it did not create (events, attempts, jobs...); without it such a rollback refuses (IU005)")
	asJSON := fs.Bool("json", false, "plan: print the plan as JSON lines")
	synopsis := "iu-runner migrate plan|up|down|status|check|version [flags]\n\n" +
		"Applies the migrations embedded in the binary (the same files as sql/iu-core) with goose,\n" +
		"holding a PostgreSQL session lock of its own, so two deploys never migrate at once. The\n" +
		"package's history is the table iu_core_db_version (goose_db_version is never touched).\n" +
		"  plan     before anything changes: one line per existing object, what up would do to it\n" +
		"           (create, adopt, replace, keep, refuse and why); exit 3 when up would refuse\n" +
		"  up       plan, then apply every pending migration (refuses with exit 3, changing\n" +
		"           nothing, when the plan refuses; --partition-txids N: the history partition\n" +
		"           width the partitioning migration installs)\n" +
		"  down     roll back the newest migration (or to --to N)\n" +
		"  status   list migrations and whether each is applied; exit 3 while any is pending\n" +
		"  check    one line: up to date (exit 0) or how many are pending (exit 3); gates a deploy\n" +
		"  version  print the database's current version\n" +
		"A rollback never destroys history: down refuses to drop a table holding rows the package\n" +
		"did not create unless --drop-history says so; on an adopted database it gives the\n" +
		"first generation's tables back with every row.\n" +
		"Exit codes: 0 ok, 1 failure, 2 usage error, 3 migrations pending (status, check) or\n" +
		"install refused (plan, up)."
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
	case "plan", "up", "down", "status", "check", "version":
	case "":
		return usageErr(env, "migrate", "missing action: plan, up, down, status, check or version")
	default:
		return usageErr(env, "migrate", "unknown action %q: want plan, up, down, status, check or version", action)
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
	if *dropHistory {
		// read by every Down that would drop a table holding rows the package did not create
		cc.RuntimeParams["iu.drop_history"] = "all"
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
	case "plan":
		plan, err := m.Plan(ctx)
		if err != nil {
			return fail(env, "migrate", err)
		}
		printPlan(env.Stdout, plan, *asJSON)
		if n := len(migrate.Refusals(plan)); n > 0 {
			fmt.Fprintf(env.Stdout, "up would refuse: %d object(s) cannot be adopted as they are (see refuse above)\n", n)
			return ExitProblem
		}
	case "up":
		// The plan first: a refusal changes nothing, not even goose's version table.
		plan, err := m.Plan(ctx)
		if err != nil {
			return fail(env, "migrate", err)
		}
		if refused := migrate.Refusals(plan); len(refused) > 0 {
			printPlan(env.Stdout, plan, false)
			log.Error("iu-runner migrate up refused before changing anything", "refused", len(refused))
			return ExitProblem
		}
		for _, l := range plan {
			if l.Verdict == migrate.VerdictAdopt || l.Verdict == migrate.VerdictReplace {
				fmt.Fprintf(env.Stdout, "%-8s %s: %s\n", l.Verdict, l.Object, l.Detail)
			}
		}
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
		// The rollback rule for every Down it would run, first: a refusal changes nothing.
		target := *to
		if target < 0 {
			v, err := m.Version(ctx)
			if err != nil {
				return fail(env, "migrate", err)
			}
			target = v - 1
		}
		if err := m.CheckRollback(ctx, target); err != nil {
			return fail(env, "migrate", err)
		}
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

// printPlan writes the plan as an aligned table (or JSON lines).
func printPlan(w io.Writer, plan []migrate.PlanLine, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, l := range plan {
			_ = enc.Encode(l)
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VERDICT\tOBJECT\tDETAIL")
	for _, l := range plan {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", l.Verdict, l.Object, l.Detail)
	}
	tw.Flush()
}
