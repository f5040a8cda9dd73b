package pgtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// PlantLog is the table every look-alike of PlantLookalikes writes to when it runs.
const PlantLog = "iu_plant_log"

// PlantLookalikes creates schema (as the test's superuser, standing for a database owner)
// holding look-alikes of everything the runner and the runtime scripts reach by name: the
// API functions they call with the same argument types (answering like the real ones
// would, so a caller that reached one would carry on as if all were well), the views and
// tables they read or write, and overloads of the built-ins they use. Each logs the call
// into <schema>.iu_plant_log; PlantedCalls reads it. The schema is then put first in a
// search_path by the caller (ALTER DATABASE/ROLE ... SET search_path, or by naming it after
// a login, which "$user" finds).
func PlantLookalikes(t testing.TB, db *DB, schema string) {
	t.Helper()
	s := pgx.Identifier{schema}.Sanitize()
	logAs := func(what, ret string) string {
		return fmt.Sprintf(`BEGIN INSERT INTO %s.%s VALUES (%s); RETURN %s; END`, s, PlantLog, quote(what), ret)
	}
	fakeRun := `'{"worker": "iu_outbound_default", "gated": false, "busy": false, "claimed": 0, "attempts_written": 0, "dead_lettered": 0,
	             "dry_run": 0, "disabled": 0, "skipped": 0, "failed": 0, "sent": 0, "caught_up": true, "idle": true, "event_domain": "iu",
	             "batch_limit": 500, "window_open": false, "windows_opened": 1, "windows_closed": 1, "fallback": false,
	             "already_attempted": 0, "held_open_count": 0, "held_open_by": [], "run_at": "2026-01-01T00:00:00Z"}'::jsonb`
	stmts := []string{
		`CREATE SCHEMA ` + s,
		`CREATE TABLE ` + s + `.` + PlantLog + ` (what text)`,
		`GRANT USAGE ON SCHEMA ` + s + ` TO PUBLIC`,
		`GRANT INSERT, SELECT ON ` + s + `.` + PlantLog + ` TO PUBLIC`,
		// The runner's calls.
		`CREATE FUNCTION ` + s + `.fn_iu_route_worker_run(p_worker_name text, p_batch_limit integer DEFAULT 100) RETURNS jsonb LANGUAGE plpgsql AS $$` +
			logAs("fn_iu_route_worker_run", fakeRun) + `$$`,
		`CREATE FUNCTION ` + s + `.fn_queue_stale_check() RETURNS jsonb LANGUAGE plpgsql AS $$` +
			logAs("fn_queue_stale_check", `'{"checked": 0, "stale": 0, "emitted": 0, "suppressed": 0, "recovered": 0, "skipped_locked": 0}'::jsonb`) + `$$`,
		`CREATE FUNCTION ` + s + `.fn_job_reap_expired_leases() RETURNS jsonb LANGUAGE plpgsql AS $$` +
			logAs("fn_job_reap_expired_leases", `'{"reaped": 0, "requeued": 0, "dead": 0}'::jsonb`) + `$$`,
		`CREATE FUNCTION ` + s + `.fn_job_prune(p_limit integer DEFAULT 10000) RETURNS jsonb LANGUAGE plpgsql AS $$` +
			logAs("fn_job_prune", `'{"pruned": 0}'::jsonb`) + `$$`,
		`CREATE FUNCTION ` + s + `.fn_iu_partition_maintain() RETURNS jsonb LANGUAGE plpgsql AS $$` +
			logAs("fn_iu_partition_maintain", `'{"busy": false, "created": []}'::jsonb`) + `$$`,
		`CREATE FUNCTION ` + s + `.fn_queue_heartbeat_tick(p_executor_name text, p_executor_kind text, p_status text DEFAULT 'ok', p_metadata jsonb DEFAULT '{}') RETURNS jsonb LANGUAGE plpgsql AS $$` +
			logAs("fn_queue_heartbeat_tick", `'{"ticks_total": 1}'::jsonb`) + `$$`,
		`CREATE FUNCTION ` + s + `.pg_notify(text, text) RETURNS void LANGUAGE plpgsql AS $$` + logAs("pg_notify", "") + `$$`,
		`CREATE FUNCTION ` + s + `.current_database() RETURNS name LANGUAGE plpgsql AS $$` + logAs("current_database", "'planted'") + `$$`,
		// The scripts' calls and tables.
		`CREATE FUNCTION ` + s + `.fn_iu_route_worker_register(p_worker_name text, p_event_domain text DEFAULT 'iu') RETURNS jsonb LANGUAGE plpgsql AS $$` +
			logAs("fn_iu_route_worker_register", `'{"registered": true}'::jsonb`) + `$$`,
		`CREATE FUNCTION ` + s + `.fn_iu_core_routes_enabled() RETURNS boolean LANGUAGE plpgsql AS $$` + logAs("fn_iu_core_routes_enabled", "false") + `$$`,
		`CREATE FUNCTION ` + s + `.fn_iu_route_worker_enabled() RETURNS boolean LANGUAGE plpgsql AS $$` + logAs("fn_iu_route_worker_enabled", "false") + `$$`,
		`CREATE TABLE ` + s + `.dot_config (key text PRIMARY KEY, value text NOT NULL, description text NOT NULL DEFAULT '',
		     updated_at timestamptz NOT NULL DEFAULT now(), updated_by text NOT NULL DEFAULT current_user)`,
		`GRANT ALL ON ` + s + `.dot_config TO PUBLIC`,
		`CREATE TABLE ` + s + `.iu_route_worker_cursor (LIKE public.iu_route_worker_cursor)`,
		`CREATE TABLE ` + s + `.queue_heartbeat (LIKE public.queue_heartbeat)`,
		`CREATE VIEW ` + s + `.v_queue_health AS SELECT * FROM public.v_queue_health WHERE false`,
		`GRANT SELECT ON ` + s + `.iu_route_worker_cursor, ` + s + `.queue_heartbeat, ` + s + `.v_queue_health TO PUBLIC`,
		`CREATE FUNCTION ` + s + `.attack_text_eq(a text, b text) RETURNS boolean LANGUAGE plpgsql AS $$` + logAs("operator =", "a OPERATOR(pg_catalog.=) b") + `$$`,
		`CREATE OPERATOR ` + s + `.= (LEFTARG = text, RIGHTARG = text, FUNCTION = ` + s + `.attack_text_eq)`,
	}
	for _, st := range stmts {
		db.Exec(t, st)
	}
}

// PlantedCalls returns what ran of the look-alikes in schema, comma-separated ("" when
// nothing did).
func PlantedCalls(t testing.TB, db *DB, schema string) string {
	t.Helper()
	var got string
	db.QueryRow(t, `SELECT coalesce(string_agg(what, ',' ORDER BY what), '') FROM `+
		pgx.Identifier{schema}.Sanitize()+`.`+PlantLog, nil, &got)
	return got
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
