package cli

import (
	"context"
	"flag"

	"github.com/iu-core/event-worker/internal/health"
)

func runHealth(ctx context.Context, args []string, env Env) int {
	fs := flag.NewFlagSet("health", flag.ContinueOnError)
	var c common
	c.register(fs, "warn", true)
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	grace := fs.Duration("gated-grace", health.DefaultGatedGrace, "how long a closed gate may keep events waiting for a worker before it is a problem (exit 3)")
	pausedGrace := fs.Duration("paused-grace", health.DefaultPausedGrace, "how long an executor may stay paused before it is a problem (exit 3); 0: never")
	synopsis := "iu-runner health [--json] [flags]\n\n" +
		"Prints v_queue_health (one row per route worker cursor, executor heartbeat, open\n" +
		"dead-letter group and queued job kind); problem rows are marked '!'.\n" +
		"Exit 0 when all is well, 3 when anything is stale, critical or has open dead letters, an\n" +
		"executor beats with status error or has been paused longer than --paused-grace, or a\n" +
		"closed gate has kept events waiting longer than --gated-grace,\n" +
		"1 when the view cannot be read, 2 on a usage error."
	if code, done := parse(fs, args, env, synopsis); done {
		return code
	}
	c.db.Parsed(fs)
	if fs.NArg() > 0 {
		return usageErr(env, "health", "unexpected argument %q", fs.Arg(0))
	}
	if err := c.db.Validate(); err != nil {
		return usageErr(env, "health", "%v", err)
	}
	if *grace < 0 {
		return usageErr(env, "health", "--gated-grace must not be negative")
	}
	if *pausedGrace < 0 {
		return usageErr(env, "health", "--paused-grace must not be negative")
	}
	rules := health.Rules{GatedGrace: *grace, PausedGrace: *pausedGrace}
	log, err := c.logger(env)
	if err != nil {
		return usageErr(env, "health", "%v", err)
	}
	pool, st, err := c.connect(ctx, env, log)
	if err != nil {
		return fail(env, "health", err)
	}
	defer pool.Close()
	rows, err := st.QueueHealth(ctx)
	if err != nil {
		return fail(env, "health", err)
	}
	if *asJSON {
		err = rules.RenderJSON(env.Stdout, rows)
	} else {
		err = rules.RenderTable(env.Stdout, rows)
	}
	if err != nil {
		return fail(env, "health", err)
	}
	return rules.ExitCode(rows)
}
