package routeworker

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule, health and views: per worker the gates, last run and its age, the backlog
// (committed events waiting after the cursor, including the unconsumed rest of an open
// window) and the age of the oldest of them, and open dead letters; the status view shows
// the same backlog, the attempt summary counts by worker and status, and the open dead
// letter view lists what to replay.
func TestHealth_BacklogOldestAndViews(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream, created_at)
	            SELECT 'iu', 'dry', 's', now() - interval '10 minutes' FROM generate_series(1, 3)`)
	emit1(t, db.Pool, typLive)
	emit(t, db.Pool, "sys", "x", 4)

	health := func() map[string]any {
		var m map[string]any
		db.QueryRow(t, `SELECT fn_iu_route_worker_health($1)`, []any{b.worker}, &m)
		return m
	}
	h := health()
	requireCounts(t, h, map[string]int{"backlog": 4, "open_dead_letters": 0, "runs_total": 0})
	if age, _ := h["oldest_pending_age_seconds"].(float64); age < 600 {
		t.Fatalf("oldest pending age %v, want >= 600: %v", h["oldest_pending_age_seconds"], h)
	}
	gates, _ := h["gates"].(map[string]any)
	if gates["open"] != true || h["last_run_at"] != nil || h["worker"] != b.worker {
		t.Fatalf("health: %v", h)
	}

	run(t, db.Pool, b.worker, 2) // window stays open after 2 of 4
	h = health()
	requireCounts(t, h, map[string]int{"backlog": 2, "runs_total": 1})
	if h["window_open"] != true || h["last_run_age_seconds"] == nil {
		t.Fatalf("health after a partial run: %v", h)
	}
	var viewBacklog int
	var gatesOpen bool
	db.QueryRow(t, `SELECT backlog, gates_open FROM v_iu_route_worker_status WHERE worker_name = 'w'`, nil, &viewBacklog, &gatesOpen)
	if viewBacklog != 2 || !gatesOpen {
		t.Fatalf("v_iu_route_worker_status: backlog %d gates_open %v", viewBacklog, gatesOpen)
	}

	run(t, db.Pool, b.worker, 100)
	h = health()
	requireCounts(t, h, map[string]int{"backlog": 0, "open_dead_letters": 1, "dead_lettered": 1, "events_seen": 4})
	if h["oldest_pending_age_seconds"] != nil {
		t.Fatalf("no backlog, yet an oldest age: %v", h)
	}

	// All workers at once.
	var all map[string]any
	db.QueryRow(t, `SELECT fn_iu_route_worker_health()`, nil, &all)
	if ws, _ := all["workers"].([]any); len(ws) != 1 || ws[0].(map[string]any)["worker"] != "w" {
		t.Fatalf("health(): %v", all)
	}

	var dry, failed int
	db.QueryRow(t, `SELECT coalesce(sum(attempts) FILTER (WHERE status = 'dry_run'), 0),
	                       coalesce(sum(attempts) FILTER (WHERE status = 'failed'), 0)
	                  FROM v_iu_route_attempt_summary WHERE worker_name = 'w'`, nil, &dry, &failed)
	if dry != 3 || failed != 1 {
		t.Fatalf("v_iu_route_attempt_summary: dry_run %d failed %d", dry, failed)
	}
	var replaySQL, code string
	db.QueryRow(t, `SELECT replay_sql, error_code FROM v_iu_route_dead_letter_open`, nil, &replaySQL, &code)
	if !strings.HasPrefix(replaySQL, "SELECT fn_iu_route_dead_letter_replay(") || code != "0A000" {
		t.Fatalf("v_iu_route_dead_letter_open: %q %q", replaySQL, code)
	}

	// Closed gates show in health.
	db.Exec(t, `UPDATE dot_config SET value = 'false' WHERE key = 'iu_core.route_worker_enabled'`)
	gates, _ = health()["gates"].(map[string]any)
	if gates["open"] != false || gates["iu_core.route_worker_enabled"] != false {
		t.Fatalf("gates: %v", gates)
	}
}

// Rule, grants: dot_executor runs the worker and nothing else of 009; workflow_admin
// registers, resets, replays, reads health and the three views; PUBLIC executes nothing.
func TestGrants_ExecutorRunsAdminOperates(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	deadLetter(t, db, b.worker)
	exec := "iu_rw_exec_" + db.Name
	admin := "iu_rw_admin_" + db.Name
	for role, group := range map[string]string{exec: "dot_executor", admin: "workflow_admin"} {
		db.Exec(t, `CREATE ROLE `+pgx.Identifier{role}.Sanitize()+` LOGIN IN ROLE `+group)
		r := role
		t.Cleanup(func() {
			_, _ = db.Pool.Exec(pgtest.Ctx(t), `DROP ROLE IF EXISTS `+pgx.Identifier{r}.Sanitize())
		})
	}
	as := func(role string) *pgx.Conn {
		c := db.Conn(t)
		if _, err := c.Exec(pgtest.Ctx(t), `SET ROLE `+pgx.Identifier{role}.Sanitize()); err != nil {
			t.Fatal(err)
		}
		return c
	}

	ce := as(exec)
	requireCounts(t, run(t, ce, b.worker, 100), map[string]int{"claimed": 0})
	for _, call := range []string{
		`SELECT fn_iu_route_worker_register('x')`,
		`SELECT fn_iu_route_worker_reset_cursor('w')`,
		`SELECT fn_iu_route_worker_health()`,
		`SELECT fn_iu_route_dead_letter_replay(gen_random_uuid())`,
		`SELECT public.fn_iu_route_deliver('{}', 'r', 'k', 'key')`,
		`SELECT * FROM iu_core.fn_iu_route_worker_claim('iu', ROW(NULL, pg_current_snapshot(), NULL, NULL)::iu_core.iu_route_window, 1)`,
		`SELECT 1 FROM v_iu_route_worker_status`,
		`SELECT 1 FROM v_iu_route_dead_letter_open`,
		`SELECT 1 FROM v_iu_route_attempt_summary`,
		`SELECT 1 FROM iu_route_worker_cursor`,
	} {
		_, err := ce.Exec(pgtest.Ctx(t), call)
		pgtest.RequireSQLState(t, err, "42501")
	}

	ca := as(admin)
	for _, call := range []string{
		`SELECT fn_iu_route_worker_register('w_admin')`,
		`SELECT fn_iu_route_worker_run('w_admin')`,
		`SELECT fn_iu_route_worker_health()`,
		`SELECT fn_iu_route_worker_reset_cursor('w_admin')`,
		`SELECT fn_iu_route_dead_letter_replay(id) FROM v_iu_route_dead_letter_open`,
		`SELECT * FROM v_iu_route_worker_status`,
		`SELECT * FROM v_iu_route_attempt_summary`,
	} {
		if _, err := ca.Exec(pgtest.Ctx(t), call); err != nil {
			t.Errorf("workflow_admin: %s: %v", call, err)
		}
	}
	for _, call := range []string{
		`SELECT public.fn_iu_route_deliver('{}', 'r', 'k', 'key')`,
		`SELECT 1 FROM iu_route_dead_letter`,
	} {
		_, err := ca.Exec(pgtest.Ctx(t), call)
		pgtest.RequireSQLState(t, err, "42501")
	}

	// PUBLIC executes none of the route worker functions.
	var public []string
	db.QueryRow(t, `
		SELECT coalesce(array_agg(p.oid::regprocedure::text), '{}')
		  FROM pg_proc p
		 WHERE p.proname LIKE 'fn\_iu\_route\_%'
		   AND (p.proacl IS NULL OR EXISTS (SELECT 1 FROM aclexplode(p.proacl) a WHERE a.grantee = 0))`, nil, &public)
	if len(public) > 0 {
		t.Fatalf("PUBLIC may execute: %v", public)
	}
}

// routeFunctions is the grant matrix of every fn_iu_route_* function: who may
// execute it besides its owner. Internal helpers are executed by nobody but the owner
// (through the SECURITY DEFINER entry points); fn_iu_route_worker_pending is readable by
// workflow_admin because the status view and v_queue_health call it.
var routeFunctions = pgtest.GrantMatrix{
	"fn_iu_route_worker_register(text,text)":                     {"workflow_admin"},
	"fn_iu_route_worker_run(text,integer)":                       {"dot_executor", "workflow_admin"},
	"fn_iu_route_worker_batch_limits()":                          {"dot_executor", "workflow_admin"},
	"fn_iu_route_worker_register_member(text,text,text,integer)": {"workflow_admin"},
	"fn_iu_route_worker_remove_member(text,text)":                {"workflow_admin"},
	"fn_iu_route_group_health(text)":                             {"workflow_admin"},
	// Groups' internals: owner only, reached through fn_iu_route_worker_run and the three above.
	"iu_core.fn_iu_route_group_bucket(text)":                      nil,
	"iu_core.fn_iu_route_group_buckets()":                         nil,
	"iu_core.fn_iu_route_group_claims(uuid,text,integer,integer)": nil,
	"iu_core.fn_iu_route_group_decide_each(iu_core.iu_route_run_tally,text,text,iu_core.iu_route_window,integer,integer,integer)":         nil,
	"iu_core.fn_iu_route_group_decide_page(iu_core.iu_route_run_tally,text,text,iu_core.iu_route_window,integer,integer,integer,boolean)": nil,
	"iu_core.fn_iu_route_group_doc(text)":                                                                                                nil,
	"iu_core.fn_iu_route_group_page(text,iu_core.iu_route_window,integer,integer,integer)":                                               nil,
	"iu_core.fn_iu_route_group_pass(text,iu_route_worker_cursor,integer)":                                                                nil,
	"iu_core.fn_iu_route_group_rebalance(text,text,text,text)":                                                                           nil,
	"iu_core.fn_iu_route_group_settle(text)":                                                                                             nil,
	"iu_core.fn_iu_route_group_summary(iu_route_group,iu_route_group_member,boolean,boolean)":                                            nil,
	"iu_core.fn_iu_route_group_takeover(text,integer,jsonb)":                                                                             nil,
	"iu_core.fn_iu_route_worker_max_batch()":                                                                                             nil,
	"fn_iu_route_worker_reset_cursor(text)":                                                                                              {"workflow_admin"},
	"fn_iu_route_dead_letter_replay(uuid)":                                                                                               {"workflow_admin"},
	"fn_iu_route_worker_health(text)":                                                                                                    {"workflow_admin"},
	"iu_core.fn_iu_route_worker_pending(text,iu_core.iu_route_window)":                                                                   {"workflow_admin"},
	"iu_core.fn_iu_route_worker_claim(text,iu_core.iu_route_window,integer,integer,integer)":                                             nil,
	"iu_core.fn_iu_route_worker_xip(pg_snapshot)":                                                                                        nil, // the claim's late-commit xids, owner only
	"iu_core.fn_iu_route_worker_holders(pg_snapshot,pg_snapshot)":                                                                        nil,
	"iu_core.fn_iu_route_worker_beat(text,text,jsonb)":                                                                                   nil,
	"iu_core.fn_iu_route_worker_beat_due(text,text)":                                                                                     nil,
	"iu_core.fn_iu_route_event(uuid)":                                                                                                    nil, // the event of an id (the oldest row)
	"iu_core.fn_iu_route_worker_fail(iu_core.iu_route_run_tally,text,uuid,text,text,text,text,text,text)":                                nil,
	"iu_core.fn_iu_route_worker_decide_page(iu_core.iu_route_run_tally,text,text,iu_core.iu_route_window,integer,boolean,boolean)":       nil,
	"iu_core.fn_iu_route_worker_decide_each(iu_core.iu_route_run_tally,text,text,iu_core.iu_route_window,integer)":                       nil,
	"iu_core.fn_iu_route_worker_deliver_page(iu_core.iu_route_run_tally,text)":                                                           nil,
	"iu_core.fn_iu_route_worker_advance(text,text,pg_snapshot,pg_snapshot,xid8,uuid,iu_core.iu_route_run_tally,jsonb,text,text,boolean)": nil,
	"iu_core.fn_iu_route_worker_page(text,iu_core.iu_route_window,integer)":                                                              nil,
	"iu_core.fn_iu_route_decide(text,boolean,boolean)":                                                                                   nil,
	"iu_core.fn_iu_route_idempotency_key(text,text,uuid)":                                                                                nil,
	"iu_core.fn_iu_route_worker_require_name(text,text)":                                                                                 nil,
	"iu_core.fn_iu_route_worker_name_ok(text)":                                                                                           nil,
	"iu_core.fn_iu_route_worker_lock(text,text,boolean)":                                                                                 nil,
	"iu_core.fn_iu_route_worker_lock_class()":                                                                                            nil,
	"iu_core.fn_iu_route_worker_try_lock(integer)":                                                                                       nil,
	"iu_core.fn_iu_route_worker_pass(text,integer,integer)":                                                                              nil, // the run's full pass
	"iu_core.fn_iu_route_worker_idle_probe(text,integer)":                                                                                nil, // the run's idle probe, owner only
	"iu_core.fn_iu_route_worker_idle_above(text,pg_snapshot)":                                                                            nil, // the new rows above the hot ceiling, owner only
	"iu_core.fn_iu_route_worker_beat_fresh(text,text)":                                                                                   nil, // the beat rule
	"iu_core.fn_iu_route_worker_idle_rows(text,pg_snapshot,pg_snapshot)":                                                                 nil, // the run's idle outbox question, owner only
	"iu_core.fn_iu_route_worker_idle_new(text,pg_snapshot)":                                                                              nil, // its new-rows half, owner only
	"iu_core.fn_iu_route_worker_idle_late(text,pg_snapshot,pg_snapshot)":                                                                 nil, // its late-commit half, owner only
	"iu_core.fn_iu_route_worker_summary(text,text,integer,iu_core.iu_route_run_tally,boolean,integer,integer,text,boolean,jsonb)":        nil,
	"iu_core.fn_iu_route_worker_summary_counts(iu_core.iu_route_run_tally,boolean,integer,integer,text,boolean)":                         nil,
	"iu_core.fn_iu_route_run_tally_zero()":                                                                                               nil,
	"iu_core.fn_iu_route_attempt_tally_add(text,text[],integer[],integer[])":                                                             nil,
	"iu_core.fn_iu_route_worker_not_registered(text,text)":                                                                               nil,
	// v_iu_route_worker_status calls these, and a view's function calls are checked against its reader
	"iu_core.fn_iu_route_worker_cursor_problem(iu_route_worker_cursor)":                               {"workflow_admin"},
	"public.fn_iu_route_deliver(jsonb,text,text,text)":                                                nil,
	"iu_core.fn_iu_route_worker_snapshot()":                                                           nil,
	"iu_core.fn_iu_route_worker_cursor_check(iu_route_worker_cursor)":                                 nil, // the rule, owner only
	"iu_core.fn_iu_route_worker_cursor_ahead(iu_route_worker_cursor)":                                 nil, // half of the rule, owner only
	"iu_core.fn_iu_route_worker_foreign_rows(text)":                                                   nil, // the probe, owner only
	"iu_core.fn_iu_route_worker_foreign_txids(text)":                                                  {"workflow_admin"},
	"iu_core.fn_iu_route_worker_backlog_cap()":                                                        nil,
	"iu_core.fn_iu_route_worker_lock_holders(integer)":                                                {"workflow_admin"},                 // issue 21: v_queue_health names the holder
	"fn_iu_event_outbox_rebase_foreign_txids()":                                                       {"workflow_admin"},                 // the IU002 fix
	"fn_iu_route_worker_enabled()":                                                                    {"dot_executor", "workflow_admin"}, // the worker gate
	"iu_core.fn_iu_route_attempt_immutable()":                                                         nil,                                // trigger
	"iu_core.fn_iu_route_dead_letter_immutable()":                                                     nil,                                // trigger
	"iu_core.fn_iu_route_worker_cursor_stamp_reset()":                                                 nil,                                // trigger
	"iu_core.fn_iu_route_dead_letter_no_delete()":                                                     nil,                                // trigger
	"iu_core.fn_iu_route_dead_letter_matches(iu_route_dead_letter,text,text,timestamptz,timestamptz)": nil,                                // bulk replay
	"fn_iu_route_dead_letter_replay_many(jsonb,integer)":                                              {"workflow_admin"},                 // bulk replay
	// history partitions and retention
	"fn_iu_partition_maintain()":                              {"dot_executor", "workflow_admin"}, // the runner keeps partitions ahead
	"fn_iu_retention_run(boolean)":                            {"workflow_admin"},                 // drops history: operators only
	"iu_core.fn_iu_partition_guard(regclass,regclass)":        nil,
	"iu_core.fn_iu_partition_record_closes()":                 nil, // the closed rule
	"iu_core.fn_iu_partition_plan(numeric,numeric,bigint)":    nil, // how far ahead
	"iu_core.fn_iu_partition_build(text,xid8)":                nil,
	"iu_core.fn_iu_partition_attach(text,text,xid8,xid8)":     nil,
	"iu_core.fn_iu_partition_default_attach(text,xid8,xid8)":  nil,
	"iu_core.fn_iu_partition_extend(bigint)":                  nil,
	"iu_core.fn_iu_history_lock(integer)":                     nil, // the partition-maintenance lock
	"iu_core.fn_iu_history_lock_holder()":                     nil,
	"iu_core.fn_iu_history_lock_tables(regclass[],text[])":    nil,
	"iu_core.fn_iu_history_blockers(regclass[])":              nil,
	"iu_core.fn_iu_history_health()":                          {"workflow_admin"}, // v_queue_health's history row calls it
	"iu_core.fn_iu_retention_config(text,text,bigint,bigint)": nil,
	"iu_core.fn_iu_retention_partition_unrouted(xid8,xid8)":   nil,
	"iu_core.fn_iu_retention_ledger_immutable()":              nil, // trigger
}

// Rule: the grant matrix of the route worker's functions holds exactly, PUBLIC executes
// none, every SECURITY DEFINER one pins search_path = pg_catalog, pg_temp, and no
// fn_iu_route_* function exists outside the matrix.
func TestGrants_RouteWorkerMatrixAndPinnedSearchPath(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	pgtest.RequireGrants(t, db, routeFunctions, `fn\_iu\_route\_%`, `fn\_iu\_partition\_%`, `fn\_iu\_retention\_%`, `fn\_iu\_history\_%`)
	// Views: SELECT to workflow_admin only.
	for _, v := range []string{"v_iu_route_worker_status", "v_iu_route_dead_letter_open", "v_iu_route_attempt_summary"} {
		var admin, exec, public bool
		db.QueryRow(t, `SELECT has_table_privilege('workflow_admin', $1::regclass, 'SELECT'),
		                       has_table_privilege('dot_executor', $1::regclass, 'SELECT'),
		                       EXISTS (SELECT 1 FROM pg_class c, aclexplode(c.relacl) a WHERE c.oid = $1::regclass AND a.grantee = 0)`,
			[]any{v}, &admin, &exec, &public)
		if !admin || exec || public {
			t.Errorf("%s: workflow_admin %v, dot_executor %v, PUBLIC %v; want true, false, false", v, admin, exec, public)
		}
	}
}
