package queuehealth

import (
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// queueFunctions is the queue-health surface (heartbeats, the ping, the stale-check, the
// NOTIFY bridge) with the group roles that may execute each function; internal helpers and
// trigger functions are granted to nobody. The job queue's is in tests/jobqueue.
var queueFunctions = pgtest.GrantMatrix{
	"fn_queue_heartbeat_register(text,text,text[],integer,integer,text,text)":      {"workflow_admin"},
	"fn_queue_heartbeat_pause(text,text,text)":                                     {"workflow_admin"},
	"fn_queue_heartbeat_resume(text,text)":                                         {"workflow_admin"},
	"fn_cut_heartbeat_ping(text,text,text,jsonb)":                                  {"workflow_admin"},
	"fn_queue_heartbeat_write(text,jsonb,text)":                                    {"dot_executor"},
	"fn_queue_heartbeat_tick(text,text,text,jsonb)":                                {"dot_executor"},
	"fn_queue_stale_check()":                                                       {"dot_executor"},
	"fn_queue_notify_enabled()":                                                    {"workflow_admin", "dot_executor"},
	"iu_core.fn_queue_actor(text,text)":                                            nil,
	"iu_core.fn_queue_heartbeat_refusal(text)":                                     nil, // the protected-executor refusal
	"iu_core.fn_queue_heartbeat_may_beat(text)":                                    nil, // the owning-role rule
	"iu_core.fn_queue_heartbeat_refuse_foreign(text,text,text)":                    nil,
	"iu_core.fn_queue_stale_alert_row()":                                           nil,                // trigger: alert-state row per executor
	"iu_core.fn_queue_alert_emit(text,text,text,jsonb)":                            nil,                // the stale-check's own writer
	"iu_core.fn_queue_heartbeat_is_stale(timestamptz,integer,integer,timestamptz)": {"workflow_admin"}, // the assessment v_queue_health inlines
	"iu_core.fn_queue_heartbeat_is_ahead(timestamptz,timestamptz)":                 nil,
	"iu_core.fn_queue_heartbeat_gap_ratio(timestamptz,integer,timestamptz)":        {"workflow_admin"},
	"iu_core.fn_queue_heartbeat_severity(numeric)":                                 {"workflow_admin"},
	"iu_core.fn_queue_heartbeat_defaults(text)":                                    nil, // default cadence and threshold
	"iu_core.fn_queue_executor_kinds()":                                            nil, // the vocabulary
	"iu_core.fn_queue_heartbeat_floor_seconds()":                                   {"workflow_admin"},
	"iu_core.fn_queue_heartbeat_is_protected(text)":                                nil,
	"fn_queue_runner_beat(text,uuid,text,jsonb,boolean)":                           {"dot_executor"}, // a runner's own row
	"iu_core.fn_queue_heartbeat_require_room(text,text)":                           nil,              // the self-registration bound
	"iu_core.fn_queue_heartbeat_self_registered_limit()":                           nil,
	"iu_core.fn_queue_runner_lease_seconds()":                                      nil,
	"iu_core.fn_queue_heartbeat_describe(queue_heartbeat)":                         nil,
	"iu_core.fn_queue_wake_notify_event_outbox()":                                  nil,
	"iu_core.fn_queue_wake_notify_job_queue()":                                     nil,
	"iu_core.fn_queue_notify_bridge_sync()":                                        nil, // trigger: adds/drops the bridge's triggers with the gate
	"iu_core.fn_queue_dead_letter_filter(text,jsonb,text)":                         nil, // bulk replay
}

// Rule: PUBLIC executes none of them; each group role executes exactly its share; every
// SECURITY DEFINER one pins search_path = pg_catalog, pg_temp.
func TestQueueRoles_GrantMatrixAndPinnedSearchPath(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	pgtest.RequireGrants(t, db, queueFunctions, `fn\_queue\_%`, `fn\_cut\_%`)
}

// Rule: executors and operators reach the tables only through the functions; a login
// role with neither group role gets 42501 on the queue tables, the view and the functions;
// dot_executor cannot call operator functions and workflow_admin cannot beat.
func TestQueueRoles_TablesClosedAndRolesSeparated(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	register(t, db, "exec_roles", 10, 30)
	none := asRole(t, db, "")
	for _, stmt := range []string{
		`SELECT 1 FROM job_queue`, `SELECT 1 FROM job_dead_letter`, `SELECT 1 FROM v_queue_health`,
		`SELECT fn_queue_stale_check()`, `SELECT fn_job_enqueue('k', 'iu')`, `SELECT fn_queue_heartbeat_write('exec_roles', '{}', 'x')`,
	} {
		pgtest.RequireSQLState(t, callErr(t, none, stmt), "42501")
	}
	exec := asRole(t, db, "dot_executor")
	callJSON(t, exec, `SELECT fn_queue_heartbeat_write('exec_roles', '{}', 'x')`)
	callJSON(t, exec, `SELECT fn_queue_stale_check()`)
	callJSON(t, exec, `SELECT fn_queue_heartbeat_tick('exec_roles2', 'DOT')`)
	var id string
	if err := exec.QueryRow(ctx(t), `SELECT fn_job_enqueue('k', 'iu')::text`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if got := claim(t, exec, "w", 1); len(got) != 1 {
		t.Fatalf("dot_executor claim: %v", got)
	}
	callJSON(t, exec, `SELECT fn_job_complete($1, 'w')`, id)
	for _, stmt := range []string{
		`SELECT fn_queue_heartbeat_register('x', 'DOT', '{}', 1, 1, 'x')`, `SELECT fn_queue_heartbeat_pause('exec_roles', 'r', 'x')`,
		`SELECT fn_job_reap_expired_leases()`, `SELECT 1 FROM job_queue`,
	} {
		pgtest.RequireSQLState(t, callErr(t, exec, stmt), "42501")
	}
	admin := asRole(t, db, "workflow_admin")
	callJSON(t, admin, `SELECT fn_queue_heartbeat_register('exec_admin', 'DOT', '{}', 10, 30, 'ops')`)
	callJSON(t, admin, `SELECT fn_queue_heartbeat_pause('exec_admin', 'maintenance', 'ops')`)
	callJSON(t, admin, `SELECT fn_queue_heartbeat_resume('exec_admin', 'ops')`)
	callJSON(t, admin, `SELECT fn_job_reap_expired_leases()`)
	pgtest.RequireSQLState(t, callErr(t, admin, `SELECT fn_queue_heartbeat_write('exec_admin', '{}', 'x')`), "42501")
}
