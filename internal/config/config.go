package config

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// AppName is the application_name every runner connection carries by default.
const AppName = "iu-runner"

// Source names where the connection settings came from.
type Source string

const (
	SourceFlag        Source = "flag --database-url"
	SourceDatabaseURL Source = "env DATABASE_URL"
	SourceLibpqEnv    Source = "env PG* (libpq)"
)

// DB holds the connection flags shared by every subcommand.
type DB struct {
	URL              string        // --database-url (empty: not given)
	StatementTimeout time.Duration // --statement-timeout
	ConnectTimeout   time.Duration // --connect-timeout
	MaxConns         int           // --max-conns
}

// Register adds the connection flags to fs.
func (d *DB) Register(fs *flag.FlagSet) {
	fs.StringVar(&d.URL, "database-url", "", "PostgreSQL URL or key=value DSN (default: $DATABASE_URL, else libpq PG* variables)")
	fs.DurationVar(&d.StatementTimeout, "statement-timeout", 30*time.Second, "statement_timeout set on every connection (0: not set, the role's or database's setting applies)")
	fs.DurationVar(&d.ConnectTimeout, "connect-timeout", 10*time.Second, "connect timeout when the URL sets none")
	fs.IntVar(&d.MaxConns, "max-conns", 4, "maximum pool connections")
}

// Validate checks the flag values.
func (d *DB) Validate() error {
	if d.StatementTimeout < 0 {
		return errors.New("--statement-timeout must not be negative")
	}
	if d.ConnectTimeout <= 0 {
		return errors.New("--connect-timeout must be positive")
	}
	if d.MaxConns < 2 {
		return errors.New("--max-conns must be at least 2")
	}
	return nil
}

// Resolve applies the precedence rule: flag, then DATABASE_URL, then libpq PG* variables
// (an empty string, which pgx.ParseConfig completes from PG*). getenv is os.Getenv in the
// binary and a map in tests.
func Resolve(flagURL string, getenv func(string) string) (string, Source) {
	if strings.TrimSpace(flagURL) != "" {
		return flagURL, SourceFlag
	}
	if u := getenv("DATABASE_URL"); strings.TrimSpace(u) != "" {
		return u, SourceDatabaseURL
	}
	return "", SourceLibpqEnv
}

// DSN returns the resolved connection string and its source.
func (d *DB) DSN(getenv func(string) string) (string, Source) { return Resolve(d.URL, getenv) }

// PoolConfig builds the pool configuration for the resolved database with the runner's
// per-connection settings applied.
func (d *DB) PoolConfig(getenv func(string) string) (*pgxpool.Config, Source, error) {
	dsn, src := d.DSN(getenv)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, src, fmt.Errorf("parsing database settings from %s: %w", src, redactErr(err))
	}
	Apply(cfg.ConnConfig, d.StatementTimeout, d.ConnectTimeout)
	cfg.MaxConns = int32(d.MaxConns)
	cfg.MinConns = 0
	cfg.HealthCheckPeriod = 15 * time.Second
	return cfg, src, nil
}

// Apply sets application_name (unless given), statement_timeout, the connect timeout (when
// none is set) and the PgBouncer-safe exec mode on one connection configuration.
func Apply(cc *pgx.ConnConfig, statementTimeout, connectTimeout time.Duration) {
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	if _, ok := cc.RuntimeParams["application_name"]; !ok {
		cc.RuntimeParams["application_name"] = AppName
	}
	if statementTimeout > 0 {
		cc.RuntimeParams["statement_timeout"] = strconv.FormatInt(statementTimeout.Milliseconds(), 10)
	}
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = connectTimeout
	}
	cc.DefaultQueryExecMode = pgx.QueryExecModeExec
}

// Describe returns loggable, password-free attributes of a connection configuration.
func Describe(cc *pgx.ConnConfig, src Source) []any {
	return []any{
		slog.String("source", string(src)),
		slog.String("host", cc.Host),
		slog.Int("port", int(cc.Port)),
		slog.String("database", cc.Database),
		slog.String("user", cc.User),
		slog.String("application_name", cc.RuntimeParams["application_name"]),
		slog.String("statement_timeout_ms", cc.RuntimeParams["statement_timeout"]),
	}
}

// redactErr keeps pgx's parse errors (which never include the password: pgconn redacts it).
func redactErr(err error) error { return err }

// LogLevel parses a --log-level value.
func LogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}
