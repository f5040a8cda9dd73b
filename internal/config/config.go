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
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SearchPath is the search_path every runner connection pins: only schemas no untrusted
// role can write.
const SearchPath = "pg_catalog, pg_temp"

// AppName is the application_name every runner connection carries by default.
const AppName = "iu-runner"

// Source names where the connection settings came from.
type Source string

const (
	SourceFlag            Source = "flag --database-url"
	SourceFlagFile        Source = "flag --database-url-file"
	SourceDatabaseURL     Source = "env DATABASE_URL"
	SourceDatabaseURLFile Source = "env DATABASE_URL_FILE"
	SourceLibpqEnv        Source = "env PG* (libpq)"
)

// The environment variables of the precedence rule (the PG* ones are read by pgx).
const (
	EnvDatabaseURL     = "DATABASE_URL"
	EnvDatabaseURLFile = "DATABASE_URL_FILE"
)

// DefaultCallTimeout is the client-side deadline of one database call when no
// statement_timeout is known (neither --statement-timeout nor the connection string sets one).
const DefaultCallTimeout = 60 * time.Second

// callSlack is added to the statement timeout for the client-side deadline: the server
// cancels first, the client deadline only catches a connection that no longer answers.
const callSlack = 5 * time.Second

// DB holds the connection flags shared by every subcommand.
type DB struct {
	URL              string        // --database-url (empty: not given)
	URLFile          string        // --database-url-file (empty: not given)
	StatementTimeout time.Duration // --statement-timeout
	// StatementTimeoutSet reports that --statement-timeout was given on the command line:
	// it then wins over a statement_timeout in the connection string; the default does not.
	StatementTimeoutSet bool
	ConnectTimeout      time.Duration // --connect-timeout
	MaxConns            int           // --max-conns (pool only; not registered by migrate)
	CallTimeout         time.Duration // --call-timeout (0: derived, see CallDeadline)
	pool                bool          // the pool flags are registered
}

// Register adds the connection flags to fs: the ones every subcommand uses.
func (d *DB) Register(fs *flag.FlagSet) {
	fs.StringVar(&d.URL, "database-url", "", "PostgreSQL URL or key=value DSN (default: $DATABASE_URL, else libpq PG* variables); a password here is visible to every local user in ps: prefer --database-url-file or PGPASSFILE")
	fs.StringVar(&d.URLFile, "database-url-file", "", "file holding the connection string (default: $DATABASE_URL_FILE); mode 0600, or 0640 owned by root; surrounding whitespace trimmed")
	fs.DurationVar(&d.ConnectTimeout, "connect-timeout", 10*time.Second, "connect timeout when the URL sets none")
}

// RegisterPool adds the flags of the commands that run SQL through the runner's pool
// (tick, run, health); migrate has its own single connection and does not take them.
func (d *DB) RegisterPool(fs *flag.FlagSet) {
	d.pool = true
	fs.DurationVar(&d.StatementTimeout, "statement-timeout", 30*time.Second,
		"statement_timeout sent on every connection when the connection string sets none (given explicitly, it wins over the connection string; 0: not sent, the role's or database's setting applies)")
	fs.DurationVar(&d.CallTimeout, "call-timeout", 0,
		"client-side deadline of each database call (0: the statement timeout + 5s, or 60s when no statement timeout is set); catches a connection that stopped answering")
	fs.IntVar(&d.MaxConns, "max-conns", 4, "maximum pool connections (run's LISTEN connection is one more, outside the pool)")
}

// Parsed records which flags were given explicitly; call it after fs.Parse.
func (d *DB) Parsed(fs *flag.FlagSet) {
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "statement-timeout" {
			d.StatementTimeoutSet = true
		}
	})
}

// Validate checks the flag values.
func (d *DB) Validate() error {
	if strings.TrimSpace(d.URL) != "" && strings.TrimSpace(d.URLFile) != "" {
		return errors.New("give --database-url or --database-url-file, not both")
	}
	if d.StatementTimeout < 0 {
		return errors.New("--statement-timeout must not be negative")
	}
	if d.CallTimeout < 0 {
		return errors.New("--call-timeout must not be negative")
	}
	if d.ConnectTimeout <= 0 {
		return errors.New("--connect-timeout must be positive")
	}
	if d.pool && d.MaxConns < 2 {
		return errors.New("--max-conns must be at least 2")
	}
	return nil
}

// CallDeadline is the client-side deadline of one database call on cc: --call-timeout when
// given, else the effective statement_timeout plus 5s, else DefaultCallTimeout.
func (d *DB) CallDeadline(cc *pgx.ConnConfig) time.Duration {
	if d.CallTimeout > 0 {
		return d.CallTimeout
	}
	return CallDeadlineFor(cc)
}

// CallDeadlineFor is the effective statement_timeout of cc plus 5s, or DefaultCallTimeout
// when none is set.
func CallDeadlineFor(cc *pgx.ConnConfig) time.Duration {
	if st, ok := EffectiveStatementTimeout(cc); ok && st > 0 {
		return st + callSlack
	}
	return DefaultCallTimeout
}

// EffectiveStatementTimeout is the statement_timeout the connection asks for: a runtime
// parameter (URL ?statement_timeout=, or the flag), else -c statement_timeout=... in
// options. ok is false when it sets none or the value cannot be read.
func EffectiveStatementTimeout(cc *pgx.ConnConfig) (time.Duration, bool) {
	if v, ok := cc.RuntimeParams["statement_timeout"]; ok {
		return parsePGDuration(v)
	}
	if v, ok := optionsStatementTimeout(cc.RuntimeParams["options"]); ok {
		return parsePGDuration(v)
	}
	return 0, false
}

// optionsStatementTimeout finds statement_timeout in a libpq options string
// ("-c statement_timeout=5s", "-cstatement_timeout=5s", "--statement_timeout=5s").
func optionsStatementTimeout(opts string) (string, bool) {
	f := strings.Fields(opts)
	val := ""
	found := false
	for i := 0; i < len(f); i++ {
		a := f[i]
		switch {
		case a == "-c" && i+1 < len(f):
			i++
			a = f[i]
		case strings.HasPrefix(a, "-c"):
			a = a[2:]
		case strings.HasPrefix(a, "--"):
			a = a[2:]
		default:
			continue
		}
		k, v, ok := strings.Cut(a, "=")
		if ok && strings.ReplaceAll(strings.ToLower(k), "-", "_") == "statement_timeout" {
			val, found = v, true // the last one wins, as in the server
		}
	}
	return val, found
}

// parsePGDuration reads a PostgreSQL time setting (plain number: milliseconds).
func parsePGDuration(v string) (time.Duration, bool) {
	v = strings.Trim(strings.TrimSpace(v), "'")
	i := 0
	for i < len(v) && (v[i] >= '0' && v[i] <= '9' || v[i] == '.') {
		i++
	}
	n, err := strconv.ParseFloat(v[:i], 64)
	if err != nil {
		return 0, false
	}
	unit := map[string]time.Duration{"": time.Millisecond, "us": time.Microsecond, "ms": time.Millisecond,
		"s": time.Second, "min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	u, ok := unit[strings.TrimSpace(v[i:])]
	if !ok {
		return 0, false
	}
	return time.Duration(n * float64(u)), true
}

// Resolve applies the precedence rule. The first level that is set wins:
//
//  1. the flags: --database-url, or --database-url-file (giving both is refused by Validate);
//  2. the environment: DATABASE_URL, or DATABASE_URL_FILE (setting both is refused: which one
//     was meant cannot be guessed);
//  3. the libpq PG* variables (an empty string, which pgx.ParseConfig completes from PG*,
//     PGPASSWORD and PGPASSFILE included).
//
// A file variant stands at its level next to its value variant: a --database-url-file
// beats DATABASE_URL, and DATABASE_URL_FILE beats the PG* variables. At every level the
// PG* variables still complete what the connection string leaves out (a URL without a
// password takes it from PGPASSFILE). Blank values count as unset. getenv is os.Getenv in
// the binary and a map in tests; files are read with ReadSecretFile.
func Resolve(flagURL, flagFile string, getenv func(string) string) (string, Source, error) {
	set := func(v string) bool { return strings.TrimSpace(v) != "" }
	switch {
	case set(flagURL) && set(flagFile):
		return "", SourceFlag, errors.New("give --database-url or --database-url-file, not both")
	case set(flagURL):
		return flagURL, SourceFlag, nil
	case set(flagFile):
		dsn, err := ReadSecretFile(flagFile)
		return dsn, SourceFlagFile, err
	}
	u, f := getenv(EnvDatabaseURL), getenv(EnvDatabaseURLFile)
	switch {
	case set(u) && set(f):
		return "", SourceDatabaseURL, errors.New("both DATABASE_URL and DATABASE_URL_FILE are set: unset one")
	case set(u):
		return u, SourceDatabaseURL, nil
	case set(f):
		dsn, err := ReadSecretFile(f)
		return dsn, SourceDatabaseURLFile, err
	}
	return "", SourceLibpqEnv, nil
}

// DSN returns the resolved connection string and its source.
func (d *DB) DSN(getenv func(string) string) (string, Source, error) {
	return Resolve(d.URL, d.URLFile, getenv)
}

// PasswordOnCommandLine reports that the connection string came from --database-url and
// carries a password (or an sslpassword): every local user can read it in ps or
// /proc/<pid>/cmdline for as long as the runner runs. The runner then warns at start; it
// never logs the password.
func (d *DB) PasswordOnCommandLine() bool {
	return strings.TrimSpace(d.URL) != "" && len(passwords(d.URL)) > 0
}

// PoolConfig builds the pool configuration for the resolved database with the runner's
// per-connection settings applied.
func (d *DB) PoolConfig(getenv func(string) string) (*pgxpool.Config, Source, error) {
	dsn, src, err := d.DSN(getenv)
	if err != nil {
		return nil, src, err
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, src, fmt.Errorf("parsing database settings from %s: %w", src, RedactErr(err, dsn))
	}
	Apply(cfg.ConnConfig, d.StatementTimeout, d.ConnectTimeout)
	if d.StatementTimeoutSet && d.StatementTimeout > 0 {
		// given on the command line: the flag wins (a startup parameter overrides
		// options=-c on the server side)
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(d.StatementTimeout.Milliseconds(), 10)
	}
	cfg.MaxConns = int32(d.MaxConns)
	cfg.MinConns = 0
	cfg.HealthCheckPeriod = 15 * time.Second
	return cfg, src, nil
}

// Apply sets application_name (unless given), statement_timeout (unless the connection
// string sets one, as a parameter or in options=-c), the connect timeout (when none is
// set), the PgBouncer-safe exec mode, and a context watcher that sends a cancel request
// when a call's context ends, so the server really stops and rolls the statement back.
func Apply(cc *pgx.ConnConfig, statementTimeout, connectTimeout time.Duration) {
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	if _, ok := cc.RuntimeParams["application_name"]; !ok {
		cc.RuntimeParams["application_name"] = AppName
	}
	// Every statement the runner sends names the package (public.fn_..., public.v_...) and
	// pg_catalog explicitly; the pinned search_path is the second wall: no search_path a
	// database owner sets on the database or the role (ALTER ... SET search_path, a schema
	// named after the login) can put a look-alike in front of what the runner calls.
	cc.RuntimeParams["search_path"] = SearchPath
	if statementTimeout > 0 && !hasStatementTimeout(cc) {
		cc.RuntimeParams["statement_timeout"] = strconv.FormatInt(statementTimeout.Milliseconds(), 10)
	}
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = connectTimeout
	}
	cc.DefaultQueryExecMode = pgx.QueryExecModeExec
	cc.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 2 * time.Second}
	}
}

// hasStatementTimeout reports a statement_timeout in the connection string, readable or not.
func hasStatementTimeout(cc *pgx.ConnConfig) bool {
	if _, ok := cc.RuntimeParams["statement_timeout"]; ok {
		return true
	}
	_, ok := optionsStatementTimeout(cc.RuntimeParams["options"])
	return ok
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
		slog.String("statement_timeout_options", statementTimeoutOption(cc)),
	}
}

// LogLevel parses a --log-level value.
func LogLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

func statementTimeoutOption(cc *pgx.ConnConfig) string {
	v, _ := optionsStatementTimeout(cc.RuntimeParams["options"])
	return v
}

// DefaultHTTPPort is the port iu-runner run serves /metrics, /healthz and /readyz on by
// default. Why 7432: the Prometheus project's list of exporter ports has handed out every
// port from 9100 to 9999 (9187, the old default, is postgres_exporter's, which often runs
// on the very hosts the runner runs on), and the ports it lists outside that range
// (10001 and up, 8080, 9001, ...) are taken too; 7432 is on neither list, is not a
// default of the tools found next to PostgreSQL (5432 the server, 6432 PgBouncer,
// 8008 Patroni, 8432 pgBackRest, 9127 pgbouncer_exporter, 9898/9999 Pgpool-II), not a
// Kubernetes component port (10248-10260), and lies below the Linux ephemeral range
// (32768-60999), so an outgoing connection never holds it. "PostgreSQL's 5432, two up".
const DefaultHTTPPort = 7432

// DefaultHTTPAddr is --http-addr's default: loopback only, so the metrics are not exposed
// to the network unless the operator says so (containers set 0.0.0.0:7432 explicitly).
const DefaultHTTPAddr = "127.0.0.1:7432"

// TakenPorts are default ports of common exporters and neighbours of PostgreSQL that the
// runner's default must never collide with (the test keeps DefaultHTTPPort off it).
var TakenPorts = map[int]string{
	9090: "Prometheus", 9091: "Pushgateway", 9093: "Alertmanager", 9094: "Alertmanager clustering",
	9100: "node_exporter", 9104: "mysqld_exporter", 9115: "blackbox_exporter", 9121: "redis_exporter",
	9127: "pgbouncer_exporter", 9187: "postgres_exporter", 9188: "postgres_exporter (alternate)",
	9464: "OpenTelemetry Prometheus exporter", 9854: "pgBackRest exporter", 9890: "pgSCV", 9933: "Patroni exporter",
	5432: "PostgreSQL", 6432: "PgBouncer", 8008: "Patroni REST API", 8432: "pgBackRest TLS server",
	9898: "Pgpool-II PCP", 9999: "Pgpool-II", 8080: "cAdvisor", 3000: "Grafana", 3100: "Loki", 4317: "OTLP gRPC", 4318: "OTLP HTTP",
	10250: "kubelet", 10249: "kube-proxy metrics", 10256: "kube-proxy health", 10257: "kube-controller-manager", 10259: "kube-scheduler",
}
