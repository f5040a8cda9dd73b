package cli

import (
	"context"
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
  migrate up|down|status|version   apply or inspect the embedded goose migrations
  tick                             one pass for cron: route, stale-check, reap; one JSON summary
  run                              long-running loop: NOTIFY wake-ups + fallback poll, /metrics
  health                           print v_queue_health; exit 3 when anything needs attention

Database: --database-url, else DATABASE_URL, else the libpq PG* variables.
Exit codes: 0 ok (gated no-op included), 1 failure, 2 usage error, 3 health problem.
Run 'iu-runner <command> --help' for a command's flags.
`

// Main runs one command line (args without the program name) and returns the exit code.
func Main(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, usage)
		return ExitUsage
	}
	switch args[0] {
	case "migrate":
		return runMigrate(ctx, args[1:], env)
	case "tick":
		return runTick(ctx, args[1:], env)
	case "run":
		return runRun(ctx, args[1:], env)
	case "health":
		return runHealth(ctx, args[1:], env)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(env.Stdout, usage)
		return ExitOK
	default:
		fmt.Fprintf(env.Stderr, "iu-runner: unknown command %q\n\n%s", args[0], usage)
		return ExitUsage
	}
}

// common is the flags every command has.
type common struct {
	db       config.DB
	logLevel string
}

func (c *common) register(fs *flag.FlagSet, defaultLevel string) {
	c.db.Register(fs)
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
		fmt.Fprintf(env.Stderr, "iu-runner %s: %v (see iu-runner %s --help)\n", fs.Name(), err, fs.Name())
		return ExitUsage, true
	}
	return 0, false
}

func usageErr(env Env, cmd string, format string, a ...any) int {
	fmt.Fprintf(env.Stderr, "iu-runner %s: %s (see iu-runner %s --help)\n", cmd, fmt.Sprintf(format, a...), cmd)
	return ExitUsage
}

func fail(env Env, cmd string, err error) int {
	msg := err.Error()
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Hint != "" {
		msg += " (hint: " + pgErr.Hint + ")"
	}
	fmt.Fprintf(env.Stderr, "iu-runner %s: error: %s\n", cmd, msg)
	return ExitFailure
}

func (c *common) logger(env Env) (*slog.Logger, error) {
	lvl, err := config.LogLevel(c.logLevel)
	if err != nil {
		return nil, err
	}
	return slog.New(slog.NewJSONHandler(env.Stderr, &slog.HandlerOptions{Level: lvl})), nil
}

// connect opens the pool and proves the database answers within the connect timeout.
func (c *common) connect(ctx context.Context, env Env, log *slog.Logger) (*pgxpool.Pool, error) {
	cfg, src, err := c.db.PoolConfig(env.Getenv)
	if err != nil {
		return nil, err
	}
	log.Info("database", config.Describe(cfg.ConnConfig, src)...)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the database (%s): %w", src, err)
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.ConnConfig.ConnectTimeout+time.Second)
	defer cancel()
	if err := store.New(pool).Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connecting to the database (%s, host %s, database %q): %w",
			src, cfg.ConnConfig.Host, cfg.ConnConfig.Database, unwrapPing(err))
	}
	return pool, nil
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

func validBatch(n int) bool { return n >= 1 && n <= 10000 }
