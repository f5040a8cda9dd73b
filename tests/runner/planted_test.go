package runner

import (
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule: no search_path a database owner can set redirects the runner. The runner names
// everything it calls with its schema (public.fn_iu_route_worker_run, pg_catalog.pg_notify)
// and pins search_path = pg_catalog, pg_temp on its connections. The database owner puts a
// schema of look-alikes first in the database's and the runner login's search_path, and
// plants a second in a schema named after the login ("$user" finds it): the look-alikes
// answer like the real functions would ("ok, nothing to do"), so a redirected tick would
// report success with nothing routed and no alert raised. The tick still routes every event
// and the stale-check still raises the alert for a silent executor; nothing planted runs.
func TestTick_PlantedSearchPathDoesNotRedirectTheRunner(t *testing.T) {
	t.Parallel()
	db := setup(t, true, false)
	emit(t, db, 30)
	login := "runner_" + db.Name
	db.Exec(t, `CREATE ROLE `+pgx.Identifier{login}.Sanitize()+` LOGIN PASSWORD 'pw' IN ROLE dot_executor, workflow_admin`)
	t.Cleanup(func() {
		_, _ = db.Pool.Exec(pgtest.Ctx(t), `DROP SCHEMA IF EXISTS `+pgx.Identifier{login}.Sanitize()+` CASCADE`)
		_, _ = db.Pool.Exec(pgtest.Ctx(t), `DROP OWNED BY `+pgx.Identifier{login}.Sanitize())
		_, _ = db.Pool.Exec(pgtest.Ctx(t), `DROP ROLE IF EXISTS `+pgx.Identifier{login}.Sanitize())
	})
	db.Exec(t, `SELECT fn_queue_heartbeat_register('silent_x', 'external_worker', '{iu}', 60, 120)`)
	db.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now() - interval '1 hour' WHERE executor_id = 'silent_x'`)

	pgtest.PlantLookalikes(t, db, "planted")
	pgtest.PlantLookalikes(t, db, login)
	db.Exec(t, `ALTER DATABASE `+pgx.Identifier{db.Name}.Sanitize()+` SET search_path = planted, pg_catalog, "$user", public`)
	db.Exec(t, `ALTER ROLE `+pgx.Identifier{login}.Sanitize()+` SET search_path = planted, pg_catalog, "$user", public`)

	u, err := url.Parse(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(login, "pw")
	r := runCLI(t, cleanEnv(), "tick", "--database-url", u.String())
	if r.code != 0 {
		t.Fatalf("tick: exit %d\n%s", r.code, r.stderr)
	}
	s := parseTick(t, r)
	if s.Claimed != 30 || attempts(t, db) != 30 {
		t.Fatalf("the tick claimed %d and wrote %d attempts, want 30 and 30 (a look-alike answered instead?)", s.Claimed, attempts(t, db))
	}
	var alerts int
	db.QueryRow(t, `SELECT count(*)::int FROM event_outbox WHERE event_type = 'queue_worker_silent' AND event_subject_ref = 'silent_x'`, nil, &alerts)
	if alerts != 1 {
		t.Fatalf("the stale-check raised %d alerts for the silent executor, want 1 (stale_check said %v)", alerts, s.StaleCheck)
	}
	for _, schema := range []string{"planted", login} {
		if got := pgtest.PlantedCalls(t, db, schema); got != "" {
			t.Errorf("the runner ran look-alikes planted in %s: %s", schema, got)
		}
	}
}
