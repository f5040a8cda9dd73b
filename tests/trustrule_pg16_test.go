package tests

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/migrate"
	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule (the trust rule, PostgreSQL 16+): a role counts as trusted only when it can act as
// the package owner: it holds the owner's privileges (INHERIT) and may become it (SET).
// PostgreSQL 16 made both options of every grant, so "member of the owner" no longer means
// "can act as the owner": a member granted the owner WITH INHERIT FALSE, SET FALSE can do
// neither, yet the old rule (pg_has_role MEMBER) trusted it: its plant in public passed
// the scan and its CREATE on public passed every SECURITY DEFINER call's guard. Proven on
// a real PostgreSQL 16: each combination of the two options, then the member that can do
// neither refused at the install and reported by the scan.
func TestTrustRule_PostgreSQL16(t *testing.T) {
	t.Parallel()
	bindir := pgtest.PG16BinDir(t)
	srv, err := pgtest.StartLocalAt(ctx(t), bindir)
	if err != nil {
		t.Fatalf("starting PostgreSQL 16 from %s: %v", bindir, err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	admin := connURL(t, srv.AdminURL, "", "")
	var version, owner string
	if err := admin.QueryRow(ctx(t), `SELECT current_setting('server_version'), current_user`).Scan(&version, &owner); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(version, "16.") {
		t.Fatalf("%s runs PostgreSQL %s, want 16", bindir, version)
	}

	name := fmt.Sprintf("iu_pg16_trust_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6)
	mustExec(t, admin, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize())
	mustExec(t, admin, `CREATE DATABASE `+pgx.Identifier{name + "_b"}.Sanitize())
	if err := migrate.Up(ctx(t), srv.DBURL(name)); err != nil {
		t.Fatalf("installing on PostgreSQL 16: %v", err)
	}
	super := connURL(t, srv.DBURL(name), "", "")
	role := func(suffix, options string) string {
		r := name + "_" + suffix
		mustExec(t, admin, `CREATE ROLE `+pgx.Identifier{r}.Sanitize()+` LOGIN PASSWORD 'pw'`)
		if options != "" {
			mustExec(t, admin, `GRANT `+pgx.Identifier{owner}.Sanitize()+` TO `+pgx.Identifier{r}.Sanitize()+` WITH `+options)
		}
		t.Cleanup(func() {
			c := context.Background()
			for _, db := range []string{name, name + "_b"} {
				if cc, err := pgx.Connect(c, srv.DBURL(db)); err == nil {
					_, _ = cc.Exec(c, `DROP OWNED BY `+pgx.Identifier{r}.Sanitize())
					cc.Close(c)
				}
			}
			_, _ = admin.Exec(c, `DROP ROLE IF EXISTS `+pgx.Identifier{r}.Sanitize())
		})
		return r
	}
	cases := []struct {
		suffix, options string
		trusted         bool
	}{
		{"neither", "INHERIT FALSE, SET FALSE", false},
		{"inherit", "INHERIT TRUE, SET FALSE", false},
		{"set", "INHERIT FALSE, SET TRUE", false},
		{"both", "INHERIT TRUE, SET TRUE", true},
		{"stranger", "", false},
	}
	roles := map[string]string{}
	for _, c := range cases {
		r := role(c.suffix, c.options)
		roles[c.suffix] = r
		var untrusted bool
		if err := super.QueryRow(ctx(t), `SELECT EXISTS (SELECT 1 FROM iu_core.fn_iu_untrusted_roles(ARRAY[$1::regrole::oid]))`, r).Scan(&untrusted); err != nil {
			t.Fatal(err)
		}
		if untrusted == c.trusted {
			t.Errorf("a member WITH %s: trusted %v, want %v", c.options, !untrusted, c.trusted)
		}
	}
	var superUntrusted bool
	if err := super.QueryRow(ctx(t), `SELECT EXISTS (SELECT 1 FROM iu_core.fn_iu_untrusted_roles(ARRAY[current_user::regrole::oid]))`).Scan(&superUntrusted); err != nil || superUntrusted {
		t.Fatalf("the owner itself must be trusted (err %v)", err)
	}
	neither := roles["neither"]

	// The install refuses a database where that member may CREATE in public.
	b := connURL(t, srv.DBURL(name+"_b"), "", "")
	mustExec(t, b, `GRANT CREATE ON SCHEMA public TO `+pgx.Identifier{neither}.Sanitize())
	e := requirePgErr(t, migrate.Up(ctx(t), srv.DBURL(name+"_b")), "42501")
	if !strings.Contains(e.Message, "create_on_schema schema public ("+neither+")") {
		t.Errorf("the install must name the member that cannot act as the owner: %s", e.Message)
	}

	// After the install: that member's plant, made while it could create in public, is
	// reported by the scan (the install's and W10's).
	mustExec(t, super, `GRANT CREATE ON SCHEMA public TO `+pgx.Identifier{neither}.Sanitize())
	mustExec(t, connURL(t, srv.DBURL(name), neither, "pw"),
		`CREATE FUNCTION public.jsonb_build_object(text, boolean, text, text) RETURNS jsonb LANGUAGE sql AS 'SELECT NULL::jsonb'`)
	mustExec(t, super, `REVOKE CREATE ON SCHEMA public FROM `+pgx.Identifier{neither}.Sanitize())
	var threats string
	if err := super.QueryRow(ctx(t), `SELECT coalesce(string_agg(threat || ' ' || object || ' (' || holder || ')', '; ' ORDER BY 1), '')
	                                    FROM iu_core.fn_iu_search_path_threats()`).Scan(&threats); err != nil {
		t.Fatal(err)
	}
	if want := "function public.jsonb_build_object(text,boolean,text,text) (" + neither + ")"; !strings.Contains(threats, want) {
		t.Errorf("the scan must report the plant of a member that cannot act as the owner (%q): %q", want, threats)
	}
	// A member that can act as the owner owns nothing untrusted: moved to it, the function
	// leaves the owner-based scan (W10's list of what the package created still has it).
	both := roles["both"]
	mustExec(t, super, `ALTER FUNCTION public.jsonb_build_object(text, boolean, text, text) OWNER TO `+pgx.Identifier{both}.Sanitize())
	var n int
	if err := super.QueryRow(ctx(t), `SELECT count(*)::int FROM iu_core.fn_iu_search_path_threats() WHERE threat = 'function'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("a member with SET and INHERIT is trusted: its function is no untrusted plant (got %d, err %v)", n, err)
	}
	if err := super.QueryRow(ctx(t), `SELECT count(*)::int FROM iu_core.fn_iu_search_path_foreign_objects() WHERE object LIKE 'public.jsonb_build_object(%'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("whoever owns it, W10 reports a function the package did not create (got %d, err %v)", n, err)
	}
}
