package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// Rule: the first level that is set wins: the flags (--database-url or
// --database-url-file), then the environment (DATABASE_URL or DATABASE_URL_FILE), then the
// libpq PG* variables; a file variant stands at its level next to its value variant, and
// two sources at one level are refused rather than guessed between.
func TestResolvePrecedence(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flagFile, envFile := file("flag", "postgres://flagfile/db\n"), file("env", "postgres://envfile/db\n")
	all := map[string]string{"DATABASE_URL": "postgres://env/db", "DATABASE_URL_FILE": envFile, "PGHOST": "pg"}
	cases := []struct {
		name           string
		flag, flagFile string
		env            map[string]string
		want           string
		src            Source
		err            string
	}{
		{"flag beats DATABASE_URL", "postgres://flag/db", "", map[string]string{"DATABASE_URL": "postgres://env/db"}, "postgres://flag/db", SourceFlag, ""},
		{"flag file beats DATABASE_URL", "", flagFile, map[string]string{"DATABASE_URL": "postgres://env/db", "PGHOST": "pg"}, "postgres://flagfile/db", SourceFlagFile, ""},
		{"flag file beats DATABASE_URL_FILE", "", flagFile, map[string]string{"DATABASE_URL_FILE": envFile}, "postgres://flagfile/db", SourceFlagFile, ""},
		{"DATABASE_URL beats PG*", "", "", map[string]string{"DATABASE_URL": "postgres://env/db", "PGHOST": "pg"}, "postgres://env/db", SourceDatabaseURL, ""},
		{"DATABASE_URL_FILE beats PG*", "", "", map[string]string{"DATABASE_URL_FILE": envFile, "PGHOST": "pg"}, "postgres://envfile/db", SourceDatabaseURLFile, ""},
		{"PG* when nothing else", "", "", map[string]string{"PGHOST": "pg"}, "", SourceLibpqEnv, ""},
		{"blank values count as unset", "  ", " ", map[string]string{"DATABASE_URL": " ", "DATABASE_URL_FILE": " "}, "", SourceLibpqEnv, ""},
		{"both flags: refused", "postgres://flag/db", flagFile, all, "", SourceFlag, "not both"},
		{"both environment variables: refused", "", "", all, "", SourceDatabaseURL, "both DATABASE_URL and DATABASE_URL_FILE"},
		{"a flag settles it before the environment is read", "postgres://flag/db", "", all, "postgres://flag/db", SourceFlag, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, src, err := Resolve(c.flag, c.flagFile, env(c.env))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Resolve = %q, %s, %v; want an error saying %q", got, src, err, c.err)
				}
				return
			}
			if err != nil || got != c.want || src != c.src {
				t.Fatalf("Resolve = %q, %s, %v; want %q, %s", got, src, err, c.want, c.src)
			}
		})
	}
	if err := (&DB{URL: "postgres://flag/db", URLFile: flagFile, ConnectTimeout: time.Second}).Validate(); err == nil {
		t.Fatal("Validate accepts --database-url with --database-url-file")
	}
}

// Rule: with neither flag nor DATABASE_URL, pgx reads the libpq PG* variables.
func TestLibpqEnvIsRead(t *testing.T) {
	t.Setenv("PGHOST", "/tmp/sock-dir")
	t.Setenv("PGPORT", "6543")
	t.Setenv("PGDATABASE", "fromenv")
	t.Setenv("PGUSER", "someone")
	d := DB{StatementTimeout: 30 * time.Second, ConnectTimeout: 10 * time.Second, MaxConns: 4}
	cfg, src, err := d.PoolConfig(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	cc := cfg.ConnConfig
	if src != SourceLibpqEnv || cc.Host != "/tmp/sock-dir" || cc.Port != 6543 || cc.Database != "fromenv" || cc.User != "someone" {
		t.Fatalf("got %s host=%s port=%d db=%s user=%s", src, cc.Host, cc.Port, cc.Database, cc.User)
	}
	// and a DATABASE_URL naming a database wins for that parameter
	cfg, src, err = d.PoolConfig(env(map[string]string{"DATABASE_URL": "postgres:///fromurl"}))
	if err != nil {
		t.Fatal(err)
	}
	if src != SourceDatabaseURL || cfg.ConnConfig.Database != "fromurl" {
		t.Fatalf("got %s db=%s", src, cfg.ConnConfig.Database)
	}
}

// Rule: every connection carries application_name=iu-runner and the statement timeout.
func TestEveryConnectionIsTagged(t *testing.T) {
	d := DB{StatementTimeout: 1500 * time.Millisecond, ConnectTimeout: 3 * time.Second, MaxConns: 4}
	cfg, _, err := d.PoolConfig(env(map[string]string{"DATABASE_URL": "postgres://u@h/db"}))
	if err != nil {
		t.Fatal(err)
	}
	rp := cfg.ConnConfig.RuntimeParams
	if rp["application_name"] != AppName || rp["statement_timeout"] != "1500" {
		t.Fatalf("runtime params %v", rp)
	}
	if cfg.ConnConfig.ConnectTimeout != 3*time.Second {
		t.Fatalf("connect timeout %v", cfg.ConnConfig.ConnectTimeout)
	}
	// 0 sends no statement_timeout at all (PgBouncer refuses unknown startup parameters)
	d0 := d
	d0.StatementTimeout = 0
	cfg0, _, err := d0.PoolConfig(env(map[string]string{"DATABASE_URL": "postgres://u@h/db"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg0.ConnConfig.RuntimeParams["statement_timeout"]; ok {
		t.Fatal("statement_timeout sent with --statement-timeout 0")
	}
	// an explicit application_name in the URL is kept
	cfg, _, err = d.PoolConfig(env(map[string]string{"DATABASE_URL": "postgres://u@h/db?application_name=mine"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.ConnConfig.RuntimeParams["application_name"]; got != "mine" {
		t.Fatalf("application_name %q", got)
	}
}

// Rule: the --statement-timeout default never overrides a statement_timeout in the
// connection string (a parameter or options=-c); an explicit flag wins; the call
// deadline follows the effective value plus 5s (60s when none is set).
func TestStatementTimeoutFromDSN(t *testing.T) {
	d := DB{StatementTimeout: 30 * time.Second, ConnectTimeout: 3 * time.Second, MaxConns: 4}
	for _, c := range []struct {
		url      string
		explicit bool
		param    string
		call     time.Duration
	}{
		{"postgres://u@h/db", false, "30000", 35 * time.Second},
		{"postgres://u@h/db?statement_timeout=5000", false, "5000", 10 * time.Second},
		{"postgres://u@h/db?options=-c%20statement_timeout%3D2min", false, "", 2*time.Minute + 5*time.Second},
		{"postgres://u@h/db?options=-c%20statement_timeout%3D2min", true, "30000", 35 * time.Second},
	} {
		dd := d
		dd.StatementTimeoutSet = c.explicit
		cfg, _, err := dd.PoolConfig(env(map[string]string{"DATABASE_URL": c.url}))
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.ConnConfig.RuntimeParams["statement_timeout"]; got != c.param {
			t.Errorf("%s explicit=%v: statement_timeout param %q, want %q", c.url, c.explicit, got, c.param)
		}
		if got := dd.CallDeadline(cfg.ConnConfig); got != c.call {
			t.Errorf("%s explicit=%v: call deadline %s, want %s", c.url, c.explicit, got, c.call)
		}
	}
	d0 := d
	d0.StatementTimeout = 0
	cfg, _, _ := d0.PoolConfig(env(map[string]string{"DATABASE_URL": "postgres://u@h/db"}))
	if got := d0.CallDeadline(cfg.ConnConfig); got != DefaultCallTimeout {
		t.Errorf("no statement timeout: call deadline %s, want %s", got, DefaultCallTimeout)
	}
	d0.CallTimeout = 7 * time.Second
	if got := d0.CallDeadline(cfg.ConnConfig); got != 7*time.Second {
		t.Errorf("--call-timeout 7s: %s", got)
	}
	// a cancelled call sends a cancel request (the server stops and rolls back)
	if cfg.ConnConfig.BuildContextWatcherHandler == nil {
		t.Fatal("no context watcher handler")
	}
	if _, ok := cfg.ConnConfig.BuildContextWatcherHandler(nil).(*pgconn.CancelRequestContextWatcherHandler); !ok {
		t.Fatal("the context watcher does not send a cancel request")
	}
}

// Rule: an error about the connection settings never shows the password, whatever the
// shape of the connection string (pgx's own masking misses blanks around '=', escaped
// blanks and upper-case keywords), and still says what is wrong with it.
func TestParseErrorsHideThePassword(t *testing.T) {
	const secret = "Zq9-s3cret"
	cases := []struct{ dsn, why string }{
		{"postgres://u:" + secret + "@h:badport/db", "invalid port"},
		{"postgresql://u:" + secret + "@h/db?sslmode=bogus", "sslmode is invalid"},
		{"postgres://u:" + secret + "@h/db?password=" + secret + "&connect_timeout=abc", "connect_timeout"},
		{"postgres://u:" + secret + "@[::1/db", "failed to parse as URL"},
		{"host=h password=" + secret + " port=x", "invalid port"},
		{"host=h password = " + secret + " port=x", "invalid port"},
		{"host=h password= " + secret + " port=x", "invalid port"},
		{"host=h password='" + secret + " with blank' port=x", "invalid port"},
		{`host=h password=Zq9-s3\ cret port=x`, "invalid port"},
		{`host=h port=x password='Zq9-s3\'cret'`, "invalid port"},
		{"host=h PASSWORD=" + secret + " port=x", "invalid port"},
		{"host=h password=" + secret + " sslmode=bogus", "sslmode is invalid"},
		{"host=h sslpassword=" + secret + " port=x", "invalid port"},
		{"postgres://h/db?sslpassword=" + secret + "&port=x", "invalid port"},
	}
	for _, c := range cases {
		t.Run(c.dsn, func(t *testing.T) {
			d := DB{URL: c.dsn, ConnectTimeout: time.Second, MaxConns: 4}
			_, _, err := d.PoolConfig(env(nil))
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			for _, leak := range []string{secret, "Zq9", "s3cret", "cret"} {
				if strings.Contains(msg, leak) {
					t.Fatalf("error shows the password (%q): %s", leak, msg)
				}
			}
			if !strings.Contains(msg, c.why) || !strings.Contains(msg, "xxxxx") {
				t.Fatalf("error does not say what is wrong (%q) with the password masked: %s", c.why, msg)
			}
		})
	}
}

// Rule: RedactErr leaves an error that names no password as it is (errors.Is still works).
func TestRedactErrKeepsOtherErrors(t *testing.T) {
	base := errors.New("dial tcp: connection refused")
	if got := RedactErr(base, "postgres://u:pw123@h/db"); got != base {
		t.Fatalf("RedactErr changed an error without a password: %v", got)
	}
	wrapped := fmt.Errorf("connecting: %w", errors.New("auth for pw123 failed"))
	if got := RedactErr(wrapped, "host=h password=pw123").Error(); strings.Contains(got, "pw123") {
		t.Fatalf("password left in %q", got)
	}
}

// Rule: the default --http-addr is loopback and its port is no common exporter's (9187 is
// postgres_exporter's: on a database host running it, the runner could not start), nor in
// the 9100-9999 range the Prometheus exporter list has given out, nor ephemeral.
func TestDefaultHTTPAddr(t *testing.T) {
	host, port, err := net.SplitHostPort(DefaultHTTPAddr)
	if err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		t.Errorf("default --http-addr host %q is not a loopback address", host)
	}
	if port != strconv.Itoa(DefaultHTTPPort) {
		t.Errorf("DefaultHTTPAddr %s does not use DefaultHTTPPort %d", DefaultHTTPAddr, DefaultHTTPPort)
	}
	if who, ok := TakenPorts[DefaultHTTPPort]; ok {
		t.Errorf("default port %d is %s's", DefaultHTTPPort, who)
	}
	if DefaultHTTPPort >= 9090 && DefaultHTTPPort <= 9999 {
		t.Errorf("default port %d is inside the Prometheus exporter allocation range 9090-9999", DefaultHTTPPort)
	}
	if DefaultHTTPPort >= 32768 {
		t.Errorf("default port %d is in the ephemeral range", DefaultHTTPPort)
	}
}
