package runtimescripts

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule: no search_path a database owner can set redirects the runtime scripts. Each pins
// search_path = pg_catalog, pg_temp first and names everything of the package with its
// schema. The database's search_path puts a schema of look-alikes first (the API functions
// the scripts call, dot_config, the cursor and heartbeat tables), and a second sits in a
// schema named after the login the scripts run as ("$user" finds it). 060 still registers
// the real worker, 070 still checks the real package (all ten pass), 080 still closes the
// real gate; nothing planted runs and the planted dot_config is never written.
func TestScripts_PlantedSearchPathDoesNotRedirectThem(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	var login string
	db.QueryRow(t, `SELECT current_user`, nil, &login)
	pgtest.PlantLookalikes(t, db, "planted")
	pgtest.PlantLookalikes(t, db, login)
	t.Cleanup(func() {
		_, _ = db.Pool.Exec(pgtest.Ctx(t), `DROP SCHEMA IF EXISTS `+pgx.Identifier{login}.Sanitize()+` CASCADE`)
	})
	db.Exec(t, `ALTER DATABASE `+pgx.Identifier{db.Name}.Sanitize()+` SET search_path = planted, pg_catalog, "$user", public`)

	mustRun(t, db, "060_route_worker_activate.sql", false)
	var registered int
	db.QueryRow(t, `SELECT count(*)::int FROM public.iu_route_worker_cursor WHERE worker_name = 'iu_outbound_default'`, nil, &registered)
	if registered != 1 {
		t.Fatalf("060 did not register the real worker")
	}
	checks, r := verify(t, db)
	if len(checks) != 10 || r.Exit != 0 {
		t.Fatalf("070 on the real package: %d rows, exit %d\n%s\n%s", len(checks), r.Exit, r.Stdout, r.Stderr)
	}
	db.Exec(t, `UPDATE public.dot_config SET value = 'true' WHERE key = 'iu_core.route_worker_enabled'`)
	out := mustRun(t, db, "080_route_worker_disable.sql", false)
	if v, _ := gateValue(t, db, "iu_core.route_worker_enabled"); v != "false" {
		t.Fatalf("080 left the real worker gate at %q\n%s", v, out.Stdout)
	}
	for _, schema := range []string{"planted", login} {
		if got := pgtest.PlantedCalls(t, db, schema); got != "" {
			t.Errorf("the scripts ran look-alikes planted in %s: %s", schema, got)
		}
		var rows int
		db.QueryRow(t, `SELECT count(*)::int FROM `+pgx.Identifier{schema}.Sanitize()+`.dot_config`, nil, &rows)
		if rows != 0 {
			t.Errorf("the scripts wrote %d rows into the planted %s.dot_config", rows, schema)
		}
	}
	if !strings.Contains(out.Stdout, "worker gate CLOSED") {
		t.Errorf("080 did not report the closed gate:\n%s", out.Stdout)
	}
}
