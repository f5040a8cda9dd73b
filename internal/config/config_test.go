package config

import (
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// Rule: --database-url wins over DATABASE_URL, which wins over the libpq PG* variables.
func TestResolvePrecedence(t *testing.T) {
	cases := []struct {
		name string
		flag string
		env  map[string]string
		want string
		src  Source
	}{
		{"flag beats DATABASE_URL", "postgres://flag/db", map[string]string{"DATABASE_URL": "postgres://env/db"}, "postgres://flag/db", SourceFlag},
		{"DATABASE_URL beats PG*", "", map[string]string{"DATABASE_URL": "postgres://env/db", "PGHOST": "pg"}, "postgres://env/db", SourceDatabaseURL},
		{"PG* when nothing else", "", map[string]string{"PGHOST": "pg"}, "", SourceLibpqEnv},
		{"blank values count as unset", "  ", map[string]string{"DATABASE_URL": " "}, "", SourceLibpqEnv},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, src := Resolve(c.flag, env(c.env))
			if got != c.want || src != c.src {
				t.Fatalf("Resolve = %q, %s; want %q, %s", got, src, c.want, c.src)
			}
		})
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
