package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/iu-core/event-worker/internal/buildinfo"
	"github.com/iu-core/event-worker/internal/config"
	"github.com/iu-core/event-worker/internal/store"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
	ExitProblem = 3
)

// DefaultWorker is the worker run when no --worker is given.
const DefaultWorker = "iu_outbound_default"

// Env is the process environment a command runs in (os's in the binary, fakes in the demo).
type Env struct {
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
}

// OSEnv is the real process environment.
func OSEnv() Env { return Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv} }

const usage = `iu-runner — runs the iu-core route workers and queue health SQL on a schedule.

Usage:
  iu-runner <command> [flags]

Commands:
  migrate plan|up|down|status|check|version
                                   apply or inspect the embedded goose migrations
                                   (status and check exit 3 while migrations are pending)
  tick                             one pass for cron: route, stale-check, reap; one JSON summary
  run                              long-running loop: NOTIFY wake-ups + fallback poll, /metrics
  health                           print v_queue_health; exit 3 when anything needs attention
  version                          print the build: module version, VCS revision, Go version
  help [command]                   this text, or a command's flags

Database: --database-url or --database-url-file, else DATABASE_URL or DATABASE_URL_FILE,
else the libpq PG* variables (PGPASSFILE for the password).
Exit codes: 0 ok (gated no-op included), 1 failure, 2 usage error, 3 health problem
(health) or migrations pending (migrate status, migrate check).
Run 'iu-runner help <command>' or 'iu-runner <command> --help' for a command's flags.
`

// commands are the subcommands; help <command> runs one with --help.
var commands = map[string]func(context.Context, []string, Env) int{
	"migrate": runMigrate,
	"tick":    runTick,
	"run":     runRun,
	"health":  runHealth,
	"version": runVersion,
}

// Main runs one command line (args without the program name) and returns the exit code.
func Main(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if len(args) == 0 {
		errLogger(env).Error("iu-runner: usage error", "error", "missing command", "exit_code", ExitUsage)
		fmt.Fprint(env.Stderr, usage)
		return ExitUsage
	}
	if cmd, ok := commands[args[0]]; ok {
		return cmd(ctx, args[1:], env)
	}
	switch args[0] {
	case "--version", "-version", "-v":
		return runVersion(ctx, args[1:], env)
	case "help", "-h", "-help", "--help":
		if len(args) > 2 {
			return usageErr(env, "help", "unexpected argument %q", args[2])
		}
		if len(args) == 2 {
			cmd, ok := commands[args[1]]
			if !ok {
				errLogger(env).Error("iu-runner help: usage error", "error", fmt.Sprintf("unknown command %q", args[1]), "exit_code", ExitUsage)
				fmt.Fprint(env.Stderr, usage)
				return ExitUsage
			}
			return cmd(ctx, []string{"--help"}, env)
		}
		fmt.Fprint(env.Stdout, usage)
		return ExitOK
	default:
		errLogger(env).Error("iu-runner: usage error", "error", fmt.Sprintf("unknown command %q", args[0]), "exit_code", ExitUsage)
		fmt.Fprint(env.Stderr, usage)
		return ExitUsage
	}
}

// common is the flags every command has.
type common struct {
	db       config.DB
	logLevel string
}

// register adds the common flags; pool is false for migrate, which has a single
// connection of its own (no statement timeout, call timeout or pool size to set).
func (c *common) register(fs *flag.FlagSet, defaultLevel string, pool bool) {
	c.db.Register(fs)
	if pool {
		c.db.RegisterPool(fs)
	}
	fs.StringVar(&c.logLevel, "log-level", defaultLevel, "log level: debug, info, warn, error (JSON logs on stderr)")
}

// parse parses fs; it returns (exit code, done). --help prints the usage on stdout.
func parse(fs *flag.FlagSet, args []string, env Env, synopsis string) (int, bool) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	printUsage := func(w io.Writer) {
		fmt.Fprintf(w, "Usage: %s\n\nFlags:\n", synopsis)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(env.Stdout)
			return ExitOK, true
		}
		return usageErr(env, fs.Name(), "%v", err), true
	}
	return 0, false
}

// errLogger is the JSON logger errors go through: one JSON object per line on stderr
// (slog escapes the newlines of multi-line database errors), whatever --log-level says.
func errLogger(env Env) *slog.Logger {
	return slog.New(slog.NewJSONHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
}

// usageErr logs a usage error as one JSON line (msg "iu-runner <cmd>: usage error").
func usageErr(env Env, cmd string, format string, a ...any) int {
	errLogger(env).Error("iu-runner "+cmd+": usage error", "command", cmd, "error", fmt.Sprintf(format, a...),
		"help", "iu-runner "+cmd+" --help", "exit_code", ExitUsage)
	return ExitUsage
}

// fail logs a failure as one JSON line (msg "iu-runner <cmd>: error"), with the server's
// SQLSTATE and hint when the error came from PostgreSQL.
func fail(env Env, cmd string, err error) int {
	attrs := []any{"command", cmd, "error", err.Error(), "exit_code", ExitFailure}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		attrs = append(attrs, "sqlstate", pgErr.Code)
		if pgErr.Hint != "" {
			attrs = append(attrs, "hint", pgErr.Hint)
		}
	}
	errLogger(env).Error("iu-runner "+cmd+": error", attrs...)
	return ExitFailure
}

func (c *common) logger(env Env) (*slog.Logger, error) {
	lvl, err := config.LogLevel(c.logLevel)
	if err != nil {
		return nil, err
	}
	return slog.New(slog.NewJSONHandler(env.Stderr, &slog.HandlerOptions{Level: lvl})), nil
}

// connect opens the pool and proves the database answers within the connect timeout. The
// store it returns bounds every call with the call timeout (config.DB.CallDeadline).
func (c *common) connect(ctx context.Context, env Env, log *slog.Logger) (*pgxpool.Pool, *store.Store, error) {
	c.warnPassword(log)
	cfg, src, err := c.db.PoolConfig(env.Getenv)
	if err != nil {
		return nil, nil, err
	}
	call := c.db.CallDeadline(cfg.ConnConfig)
	log.Info("database", append(config.Describe(cfg.ConnConfig, src), slog.String("call_timeout", call.String()))...)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to the database (%s): %w", src, err)
	}
	st := store.New(pool)
	pctx, cancel := context.WithTimeout(ctx, cfg.ConnConfig.ConnectTimeout+time.Second)
	defer cancel()
	if err := st.Ping(pctx); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("connecting to the database (%s, host %s, database %q): %w",
			src, cfg.ConnConfig.Host, cfg.ConnConfig.Database, unwrapPing(err))
	}
	st.CallTimeout = call
	return pool, st, nil
}

// warnPassword warns once at start when --database-url carries a password: any local user
// reads it in ps or /proc/<pid>/cmdline while the runner runs. The line names the safer
// sources and never the password.
func (c *common) warnPassword(log *slog.Logger) {
	if c.db.PasswordOnCommandLine() {
		log.Warn("--database-url carries a password, which every local user can read in ps while iu-runner runs: "+
			"put the connection string in a file (--database-url-file, DATABASE_URL_FILE) or the password in PGPASSFILE",
			"source", string(config.SourceFlag), "database_url", config.RedactDSN(c.db.URL))
	}
}

func unwrapPing(err error) error {
	// "pinging database: failed to connect to ..." reads better without the first hop
	if u := errors.Unwrap(err); u != nil && strings.HasPrefix(err.Error(), "pinging database: ") {
		return u
	}
	return err
}

// stringList is a repeatable flag; a value may also hold a comma-separated list.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return errors.New("empty name")
		}
		*s = append(*s, p)
	}
	return nil
}

// DefaultBatch is the runner's --batch default: a service routes bigger batches than a psql
// caller (fewer round trips per event), so it does not use fn_iu_route_worker_run's own
// default (100, for callers that pass none). The bound is the SQL's: checkBatch asks it.
const DefaultBatch = 500

// checkBatch refuses a --batch outside what fn_iu_route_worker_run accepts, as the SQL says
// it (fn_iu_route_worker_batch_limits): the bound is written once, in SQL.
func checkBatch(ctx context.Context, st *store.Store, cmd string, batch int) error {
	lim, err := st.BatchLimits(ctx)
	if err != nil {
		return err
	}
	if batch < lim.MinBatch || batch > lim.MaxBatch {
		return fmt.Errorf("%s: --batch %d: fn_iu_route_worker_run takes %d..%d events per call", cmd, batch, lim.MinBatch, lim.MaxBatch)
	}
	return nil
}

// runVersion prints the build: "iu-runner <version> (revision <rev>[, modified], <go>)",
// or the fields as JSON with --json.
func runVersion(_ context.Context, args []string, env Env) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the build information as one JSON object")
	synopsis := "iu-runner version [--json]   (also: iu-runner --version)\n\n" +
		"Prints the module version and the VCS revision the binary was built from."
	if code, done := parse(fs, args, env, synopsis); done {
		return code
	}
	if fs.NArg() > 0 {
		return usageErr(env, "version", "unexpected argument %q", fs.Arg(0))
	}
	bi := buildinfo.Read()
	if *asJSON {
		b, _ := json.Marshal(map[string]any{"version": bi.Version, "revision": bi.Revision, "time": bi.Time,
			"modified": bi.Modified, "go_version": bi.GoVersion})
		fmt.Fprintln(env.Stdout, string(b))
		return ExitOK
	}
	mod := ""
	if bi.Modified {
		mod = ", modified"
	}
	fmt.Fprintf(env.Stdout, "iu-runner %s (revision %s%s, %s)\n", bi.Version, bi.Revision, mod, bi.GoVersion)
	return ExitOK
}
