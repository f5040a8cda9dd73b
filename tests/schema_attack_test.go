package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iu-core/event-worker/internal/migrate"
	"github.com/iu-core/event-worker/internal/pgtest"
)

// The writable-schema attack. A login role that may CREATE in public (the default on
// PostgreSQL 13 and 14, or anywhere a DBA granted it) creates
// public.jsonb_build_object(text, boolean, text, text). A function whose search_path held
// public would resolve the call jsonb_build_object('gated', true, 'reason', v_reason) of an
// ordinary gated fn_iu_route_worker_run to it (a better match than the built-in VARIADIC
// "any" one) and run it as the package owner: it logs who it ran as and opens both routing
// gates. The rules: the package refuses to install while such a role or such an object
// exists (with the fix in the HINT: a plant made before the install would be in public
// when callers reach the API there), and its functions never search public (search_path =
// pg_catalog, pg_temp; everything of the package named with its schema), so a plant made
// after the install is never run; the verification (W10) reports it.

const attackOverload = `
CREATE TABLE public.attack_log (ran_as text);
GRANT INSERT ON public.attack_log TO PUBLIC;
CREATE FUNCTION public.jsonb_build_object(k1 text, v1 boolean, k2 text, v2 text)
RETURNS jsonb LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.attack_log (ran_as) VALUES (current_user);
    BEGIN
        UPDATE public.dot_config SET value = 'true'
         WHERE key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled');
    EXCEPTION WHEN OTHERS THEN NULL;
    END;
    RETURN pg_catalog.jsonb_build_object(k1, v1, k2, v2);
END;
$$;`

// attackScenario plays the attack against srv, planted before and after the install.
func attackScenario(t *testing.T, srv *pgtest.Server) {
	c := context.Background()
	admin, err := pgx.Connect(c, srv.AdminURL)
	if err != nil {
		t.Fatalf("connecting to the server: %v", err)
	}
	defer admin.Close(c)
	name := fmt.Sprintf("iu_attack_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	attacker, executor := name+"_atk", name+"_exe"
	mustExec(t, admin, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize())
	mustExec(t, admin, `CREATE ROLE `+pgx.Identifier{attacker}.Sanitize()+` LOGIN PASSWORD 'pw'`)
	t.Cleanup(func() {
		_, _ = admin.Exec(c, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`)
		_, _ = admin.Exec(c, `DROP ROLE IF EXISTS `+pgx.Identifier{attacker}.Sanitize())
		_, _ = admin.Exec(c, `DROP ROLE IF EXISTS `+pgx.Identifier{executor}.Sanitize())
	})
	dbURL := srv.DBURL(name)
	super := connURL(t, dbURL, "", "")

	// Planted BEFORE the install: a careless grant (PostgreSQL 13/14: the default) lets the
	// attacker plant the overload in an empty database.
	mustExec(t, super, `GRANT CREATE ON SCHEMA public TO PUBLIC`)
	mustExec(t, connURL(t, dbURL, attacker, "pw"), attackOverload)

	err = migrate.Up(ctx(t), dbURL)
	if err == nil {
		// The old behaviour: the install accepts it, and the first ordinary run executes the
		// overload as the package owner. Show exactly what the attacker got, then fail.
		mustExec(t, super, `CREATE ROLE `+pgx.Identifier{executor}.Sanitize()+` LOGIN PASSWORD 'pw' IN ROLE dot_executor`)
		mustExec(t, super, `SELECT fn_iu_route_worker_register('w_attack')`)
		_, runErr := connURL(t, dbURL, executor, "pw").Exec(c, `SELECT fn_iu_route_worker_run('w_attack')`)
		var ranAs, gates string
		_ = super.QueryRow(c, `SELECT coalesce(string_agg(ran_as, ','), '') FROM attack_log`).Scan(&ranAs)
		_ = super.QueryRow(c, `SELECT string_agg(key || '=' || value, ',' ORDER BY key) FROM dot_config WHERE key LIKE 'iu_core.%'`).Scan(&gates)
		t.Fatalf("the install accepted a database where PUBLIC may CREATE in public and an attacker's overload sits there; "+
			"an ordinary run (err %v) then executed it as %q and the gates read %s", runErr, ranAs, gates)
	}
	// The install plan refuses before anything changes, naming each threat and its fix.
	e := requirePgErr(t, err, "IU004")
	for _, want := range []string{"PUBLIC may CREATE in schema public", "function public.jsonb_build_object(text,boolean,text,text)",
		"REVOKE CREATE ON SCHEMA public FROM PUBLIC;", "DROP FUNCTION public.jsonb_build_object(text,boolean,text,text);"} {
		if !strings.Contains(e.Message, want) {
			t.Errorf("install refusal must name %q: %s", want, e.Message)
		}
	}
	var schemas int
	_ = super.QueryRow(c, `SELECT count(*) FROM pg_namespace WHERE nspname = 'iu_core'`).Scan(&schemas)
	if schemas != 0 {
		t.Fatal("the refused install left schema iu_core behind")
	}

	// Revoking CREATE is not enough: the planted overload would still be called.
	mustExec(t, super, `REVOKE CREATE ON SCHEMA public FROM PUBLIC`)
	e = requirePgErr(t, migrate.Up(ctx(t), dbURL), "IU004")
	if !strings.Contains(e.Message, "public.jsonb_build_object") || strings.Contains(e.Message, "may CREATE in schema public") {
		t.Errorf("after the REVOKE the refusal must name only the planted function: %s", e.Message)
	}
	mustExec(t, super, `DROP FUNCTION public.jsonb_build_object(text, boolean, text, text)`)
	if err := migrate.Up(ctx(t), dbURL); err != nil {
		t.Fatalf("with the threats removed the install must succeed: %v", err)
	}

	// Planted AFTER the install: CREATE is granted again and the overload planted. The
	// package's SECURITY DEFINER functions search only pg_catalog (search_path =
	// pg_catalog, pg_temp) and name everything of theirs with its schema, so nothing they
	// call resolves to the plant: an ordinary run works and never runs it. The verification
	// (W10, iu_core.fn_iu_search_path_threats) names the open schema and the plant.
	mustExec(t, super, `CREATE ROLE `+pgx.Identifier{executor}.Sanitize()+` LOGIN PASSWORD 'pw' IN ROLE dot_executor`)
	mustExec(t, super, `SELECT fn_iu_route_worker_register('w_attack')`)
	mustExec(t, super, `GRANT CREATE ON SCHEMA public TO PUBLIC`)
	mustExec(t, connURL(t, dbURL, attacker, "pw"), `DROP TABLE public.attack_log;`+attackOverload)
	exe := connURL(t, dbURL, executor, "pw")
	for _, stmt := range []string{`SELECT fn_iu_route_worker_run('w_attack')`, `SELECT fn_queue_stale_check()`,
		`SELECT fn_queue_heartbeat_tick('x', 'DOT')`} {
		if _, err := exe.Exec(c, stmt); err != nil {
			t.Fatalf("planted after the install, %s must still work (the package never searches public): %v", stmt, err)
		}
	}
	var ranAs, gates string
	_ = super.QueryRow(c, `SELECT coalesce(string_agg(ran_as, ','), '') FROM attack_log`).Scan(&ranAs)
	_ = super.QueryRow(c, `SELECT string_agg(key || '=' || value, ',' ORDER BY key) FROM dot_config WHERE key LIKE 'iu_core.%'`).Scan(&gates)
	if ranAs != "" || strings.Contains(gates, "true") {
		t.Fatalf("planted after the install, the overload ran as %q; gates %s", ranAs, gates)
	}
	var threats string
	_ = super.QueryRow(c, `SELECT coalesce(string_agg(threat || ' ' || object, '; ' ORDER BY 1), '') FROM iu_core.fn_iu_search_path_threats()`).Scan(&threats)
	for _, want := range []string{"create_on_schema schema public", "function public.jsonb_build_object(text,boolean,text,text)"} {
		if !strings.Contains(threats, want) {
			t.Errorf("the verification's threat scan must name %q: %s", want, threats)
		}
	}
	mustExec(t, super, `REVOKE CREATE ON SCHEMA public FROM PUBLIC`)
	mustExec(t, super, `DROP FUNCTION public.jsonb_build_object(text, boolean, text, text)`)
}

// Rule: a writable public schema never hands out the package owner's rights — on the
// harness's PostgreSQL (15+), where CREATE on public must have been granted by someone.
func TestSchemaAttack_WritablePublicRefusedBeforeAndAfterInstall(t *testing.T) {
	t.Parallel()
	pgtest.NewEmptyDB(t) // starts (or skips/fails for want of) the harness server
	h, err := pgtest.Current()
	if err != nil {
		t.Fatal(err)
	}
	attackScenario(t, h.Server)
}

// Rule: the same on PostgreSQL 13, where PUBLIC may CREATE in public by default — the
// install refuses out of the box until the DBA applies the HINT's fix.
func TestSchemaAttack_PostgreSQL13(t *testing.T) {
	t.Parallel()
	bindir := pgtest.PG13BinDir(t)
	srv, err := pgtest.StartLocalAt(ctx(t), bindir)
	if err != nil {
		t.Fatalf("starting PostgreSQL 13 from %s: %v", bindir, err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	var version string
	c, err := pgx.Connect(ctx(t), srv.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx(t), `SHOW server_version`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	c.Close(context.Background())
	if !strings.HasPrefix(version, "13.") {
		t.Fatalf("%s runs PostgreSQL %s, want 13", bindir, version)
	}

	// Out of the box (PUBLIC may CREATE in public), the install refuses and says how to fix it.
	name := fmt.Sprintf("iu_pg13_default_%d", os.Getpid())
	admin := connURL(t, srv.AdminURL, "", "")
	mustExec(t, admin, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize())
	e := requirePgErr(t, migrate.Up(ctx(t), srv.DBURL(name)), "IU004")
	if !strings.Contains(e.Message, "REVOKE CREATE ON SCHEMA public FROM PUBLIC;") {
		t.Errorf("the refusal must give the fix: %s", e.Message)
	}
	mustExec(t, connURL(t, srv.DBURL(name), "", ""), `REVOKE CREATE ON SCHEMA public FROM PUBLIC`)
	if err := migrate.Up(ctx(t), srv.DBURL(name)); err != nil {
		t.Fatalf("PostgreSQL 13 with the fix applied must install: %v", err)
	}
	attackScenario(t, srv)
}

func connURL(t testing.TB, url, user, password string) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		cfg.User, cfg.Password = user, password
	}
	c, err := pgx.ConnectConfig(ctx(t), cfg)
	if err != nil {
		t.Fatalf("connecting as %q: %v", user, err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

func mustExec(t testing.TB, c *pgx.Conn, sql string) {
	t.Helper()
	if _, err := c.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// requirePgErr unwraps err (through the migrator's wrapping) to a PostgreSQL error of code.
func requirePgErr(t testing.TB, err error, code string) *pgconn.PgError {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		t.Fatalf("want SQLSTATE %s, got %v", code, err)
	}
	if pe.Code != code {
		t.Fatalf("want SQLSTATE %s, got %s: %s (hint: %s)", code, pe.Code, pe.Message, pe.Hint)
	}
	return pe
}

// Rule: the two gate readers never resolve anything in public, so they read the real
// gates even while public is writable and holds a planted operator. They run with
// search_path = pg_catalog, pg_temp and name public.dot_config, so nothing in public is on
// their path. The attack: an untrusted login plants public.=(text, text) answering true for
// anything, so a reader resolving "value = 'true'" through public would open both gates.
func TestSchemaAttack_GateReadersResolveNothingInPublic(t *testing.T) {
	t.Parallel()
	pgtest.NewEmptyDB(t)
	h, err := pgtest.Current()
	if err != nil {
		t.Fatal(err)
	}
	c := context.Background()
	admin := connURL(t, h.Server.AdminURL, "", "")
	name := fmt.Sprintf("iu_gate_attack_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9)
	attacker, executor := name+"_atk", name+"_exe"
	mustExec(t, admin, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize())
	t.Cleanup(func() {
		_, _ = admin.Exec(c, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`)
		_, _ = admin.Exec(c, `DROP ROLE IF EXISTS `+pgx.Identifier{attacker}.Sanitize())
		_, _ = admin.Exec(c, `DROP ROLE IF EXISTS `+pgx.Identifier{executor}.Sanitize())
	})
	dbURL := h.Server.DBURL(name)
	if err := migrate.Up(ctx(t), dbURL); err != nil {
		t.Fatalf("install: %v", err)
	}
	super := connURL(t, dbURL, "", "")
	mustExec(t, super, `CREATE ROLE `+pgx.Identifier{attacker}.Sanitize()+` LOGIN PASSWORD 'pw'`)
	mustExec(t, super, `CREATE ROLE `+pgx.Identifier{executor}.Sanitize()+` LOGIN PASSWORD 'pw' IN ROLE dot_executor`)
	mustExec(t, super, `GRANT CREATE ON SCHEMA public TO PUBLIC`)
	mustExec(t, connURL(t, dbURL, attacker, "pw"), `
		CREATE TABLE public.attack_log (ran_as text);
		GRANT INSERT ON public.attack_log TO PUBLIC;
		CREATE FUNCTION public.attack_eq(a text, b text) RETURNS boolean LANGUAGE plpgsql AS $$
		BEGIN
		    INSERT INTO public.attack_log (ran_as) VALUES (current_user);
		    RETURN true;
		END;
		$$;
		CREATE OPERATOR public.= (LEFTARG = text, RIGHTARG = text, FUNCTION = public.attack_eq);`)
	exe := connURL(t, dbURL, executor, "pw")
	// The executor's own path puts public first, as a careless client would.
	mustExec(t, exe, `SET search_path = public, pg_catalog`)
	var master, worker bool
	if err := exe.QueryRow(c, `SELECT fn_iu_core_routes_enabled(), fn_iu_route_worker_enabled()`).Scan(&master, &worker); err != nil {
		t.Fatalf("reading the gates with a planted operator in public: %v", err)
	}
	var ranAs string
	if err := super.QueryRow(c, `SELECT coalesce(string_agg(ran_as, ','), '') FROM public.attack_log`).Scan(&ranAs); err != nil {
		t.Fatal(err)
	}
	if master || worker || ranAs != "" {
		t.Fatalf("closed gates read routes_enabled=%v route_worker_enabled=%v; the planted operator ran as %q", master, worker, ranAs)
	}
	// And an open gate still reads open (the readers are not simply answering false). The
	// gate is written after CREATE is revoked, as an operator would after W10 reported it;
	// the planted operator stays in public.
	mustExec(t, super, `REVOKE CREATE ON SCHEMA public FROM PUBLIC`)
	mustExec(t, super, `UPDATE dot_config SET value = 'true' WHERE key = 'iu_core.routes_enabled'`)
	if err := exe.QueryRow(c, `SELECT fn_iu_core_routes_enabled(), fn_iu_route_worker_enabled()`).Scan(&master, &worker); err != nil {
		t.Fatal(err)
	}
	if !master || worker {
		t.Fatalf("after opening only the master gate: routes_enabled=%v route_worker_enabled=%v", master, worker)
	}
}

// Rule: no function of the package searches a schema an untrusted role can write. Every
// SECURITY DEFINER function, and every other one that pins a search_path, pins exactly
// pg_catalog, pg_temp (pg_catalog is writable by superusers only, pg_temp is never searched
// for functions or operators), and names everything of the package with its schema. A
// function that runs in its caller's search_path pins none: it is inlined SQL that names
// everything, pg_catalog included (fn_iu_payload_is_clean), or it is only ever called from
// a pinned one.
func TestSearchPath_NoFunctionSearchesAWritableSchema(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	var bad []string
	db.QueryRow(t, `
		SELECT coalesce(array_agg(p.oid::regprocedure::text || ' ' || coalesce(array_to_string(p.proconfig, ' '), '(no SET)') ORDER BY 1), '{}')
		  FROM pg_proc p
		 WHERE p.pronamespace IN ('public'::regnamespace, 'iu_core'::regnamespace)
		   AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
		   AND (p.prosecdef OR EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c LIKE 'search\_path=%'))
		   AND NOT coalesce(p.proconfig @> ARRAY[$1::text], false)`, []any{pgtest.PinnedSearchPath}, &bad)
	if len(bad) > 0 {
		t.Fatalf("functions that search something else than %s:\n  %s", pgtest.PinnedSearchPath, strings.Join(bad, "\n  "))
	}
	var definers int
	db.QueryRow(t, `SELECT count(*)::int FROM pg_proc WHERE prosecdef AND pronamespace IN ('public'::regnamespace, 'iu_core'::regnamespace)`, nil, &definers)
	if definers < 30 {
		t.Fatalf("only %d SECURITY DEFINER functions found: the premise (the package's definers) is gone", definers)
	}
}
