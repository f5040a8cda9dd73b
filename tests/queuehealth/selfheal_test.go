package queuehealth

import (
	"strings"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule (issue 21): only a worker heals itself. Every route worker's heartbeat, not only
// iu_outbound_default's, is beaten by that worker's own run: before, any executor's
// fn_queue_heartbeat_tick('w2', 'external_worker', 'ok', '{}') made a dead worker w2 look
// fresh and wrote a false queue_worker_recovered. Now tick, write and ping refuse every
// route worker's name (beaten_by_its_route_worker) and write nothing, whether or not the
// row exists yet; the worker's run still beats it and that is the recovery.
func TestSelfHeal_EveryRouteWorkerIsBeatenOnlyByItsRun(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	setConfig(t, db, "queue.heartbeat.stale_threshold_seconds", "0")
	exe, _ := login(t, db, "exe", "dot_executor")
	admin, _ := login(t, db, "adm", "workflow_admin")
	db.Exec(t, `SELECT fn_iu_route_worker_register('w2')`)
	silence(t, db, "w2", 3600)
	if out := staleCheck(t, db.Pool); num(t, out, "emitted") != 1 {
		t.Fatalf("the silent worker must be alerted: %v", out)
	}
	before := beatOf(t, db, "w2")
	const refused = `{"refused": true, "reason": "beaten_by_its_route_worker"}`
	for _, stmt := range []string{
		`SELECT fn_queue_heartbeat_tick('w2', 'external_worker', 'ok', '{}')`,
		`SELECT fn_queue_heartbeat_tick('w2', 'PG_worker')`,
		`SELECT fn_queue_heartbeat_write('w2')`,
	} {
		requireJSONEqual(t, callJSON(t, exe, stmt), refused)
	}
	requireJSONEqual(t, callJSON(t, admin, `SELECT fn_cut_heartbeat_ping('w2')`), refused)
	if after := beatOf(t, db, "w2"); after != before {
		t.Fatalf("a refused beat moved the worker's row: %+v -> %+v", before, after)
	}
	if out := staleCheck(t, db.Pool); num(t, out, "recovered") != 0 {
		t.Fatalf("a refused beat must not be reported as a recovery: %v", out)
	}
	// Its row removed (by the owner), the name is still the worker's: no tick recreates it.
	db.Exec(t, `DELETE FROM queue_heartbeat WHERE executor_id = 'w2'`)
	requireJSONEqual(t, callJSON(t, exe, `SELECT fn_queue_heartbeat_tick('w2', 'Agent')`), refused)
	if n := count(t, db, `SELECT count(*) FROM queue_heartbeat WHERE executor_id = 'w2'`); n != 0 {
		t.Fatalf("a refused tick recreated the worker's row")
	}
	// The worker's own run beats (and re-registers) it.
	callJSON(t, exe, `SELECT fn_iu_route_worker_run('w2')`)
	if b := beatOf(t, db, "w2"); b.Ticks != 1 {
		t.Fatalf("the worker's run must beat its row: %+v", b)
	}
}

// Rule (issue 21): route-worker names and executors' names cannot collide. Before, an
// operator who registered a route worker under the name of a bound executor (or any other
// executor's) let every executor beat that row by running the worker: the run beats its
// own row and never tests a binding. Now the register refuses a name some executor already
// has (22023, nothing written), and a route worker's row cannot be bound afterwards.
func TestSelfHeal_RouteWorkerAndExecutorNamesCannotCollide(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	grp := "qt_grp_" + db.Name
	db.Exec(t, `CREATE ROLE `+grp+` NOLOGIN`)
	t.Cleanup(func() { _, _ = db.Pool.Exec(ctx(t), `DROP ROLE IF EXISTS `+grp) })
	admin, _ := login(t, db, "adm", "workflow_admin")
	exe, _ := login(t, db, "exe", "dot_executor")
	callJSON(t, admin, `SELECT fn_queue_heartbeat_register('bound_x', 'Agent', '{iu}', 10, 30, 'ops', $1)`, grp)
	callJSON(t, exe, `SELECT fn_queue_heartbeat_tick('ticked_y', 'Agent')`)
	for _, name := range []string{"bound_x", "ticked_y"} {
		e := pgtest.RequireSQLState(t, callErr(t, admin, `SELECT fn_iu_route_worker_register($1)`, name), "22023")
		if !strings.HasPrefix(e.Message, "fn_iu_route_worker_register: '"+name+"' is already an executor's name") {
			t.Fatalf("refusal: %s", e.Message)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM iu_route_worker_cursor WHERE worker_name IN ('bound_x', 'ticked_y')`); n != 0 {
		t.Fatalf("a refused register wrote %d cursors", n)
	}
	before := beatOf(t, db, "bound_x")
	if _, err := exe.Exec(ctx(t), `SELECT fn_iu_route_worker_run('bound_x')`); err == nil {
		t.Fatal("running an unregistered worker must fail")
	}
	if after := beatOf(t, db, "bound_x"); after != before {
		t.Fatalf("the bound executor was beaten through a route worker run: %+v -> %+v", before, after)
	}

	// A route worker's row: register tunes it, never binds it.
	callJSON(t, admin, `SELECT fn_iu_route_worker_register('w_free')`)
	e := pgtest.RequireSQLState(t, callErr(t, admin, `SELECT fn_queue_heartbeat_register('w_free', 'PG_worker', '{iu}', 60, 300, 'ops', $1)`, grp), "22023")
	if !strings.Contains(e.Message, "is a route worker's heartbeat") {
		t.Fatalf("binding a route worker: %s", e.Message)
	}
	callJSON(t, admin, `SELECT fn_queue_heartbeat_register('w_free', 'PG_worker', '{iu}', 60, 600, 'ops')`)
}

// Rule (issue 21): executors cannot create executors beyond a documented bound. Before, one
// statement of an executor (fn_queue_heartbeat_tick over generate_series(1, 2000)) created
// 2,000 executors: 2,000 heartbeat rows, 2,000 rows of v_queue_health, 2,000 metric series
// and, once silent, 2,000 alerts. A first beat now creates an executor only while fewer
// than queue.heartbeat.self_registered_limit (100) were created that way; past it the beat
// is refused (P0002, with the register call in the HINT) and nothing is written. Operators
// register any number.
func TestSelfHeal_TickCreatesExecutorsOnlyWithinTheBound(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	exe, _ := login(t, db, "exe", "dot_executor")
	admin, _ := login(t, db, "adm", "workflow_admin")
	e := pgtest.RequireSQLState(t, callErr(t, exe,
		`SELECT count(fn_queue_heartbeat_tick('flood_' || g, 'Agent')) FROM generate_series(1, 2000) g`), "P0002")
	if !strings.Contains(e.Message, "the limit, queue.heartbeat.self_registered_limit, is 100") || !strings.Contains(e.Hint, "fn_queue_heartbeat_register(") {
		t.Fatalf("refusal: %s / %s", e.Message, e.Hint)
	}
	if n := count(t, db, `SELECT count(*) FROM queue_heartbeat`); n != 0 {
		t.Fatalf("the refused statement left %d executors", n)
	}
	callJSON(t, exe, `SELECT jsonb_build_object('n', count(fn_queue_heartbeat_tick('ok_' || g, 'Agent'))) FROM generate_series(1, 100) g`)
	pgtest.RequireSQLState(t, callErr(t, exe, `SELECT fn_queue_heartbeat_tick('one_more', 'Agent')`), "P0002")
	// Known executors still beat, and operators still register.
	callJSON(t, exe, `SELECT fn_queue_heartbeat_tick('ok_1', 'Agent')`)
	callJSON(t, admin, `SELECT fn_queue_heartbeat_register('one_more', 'Agent', '{}', 60, 180, 'ops')`)
	callJSON(t, exe, `SELECT fn_queue_heartbeat_tick('one_more', 'Agent')`)
	if n := count(t, db, `SELECT count(*) FROM queue_heartbeat`); n != 101 {
		t.Fatalf("executors: %d, want 100 created by ticks and 1 by the operator", n)
	}
}

// Rule (issue 21): a runner's own row is beaten only by that runner. fn_queue_runner_beat
// creates it bound to the runner's login; tick, write and ping refuse it
// (beaten_by_its_runner), another login is refused (42501), and of that login's processes
// only the one holding the row beats it: a second process of the same id is told the row is
// held (by whom, until when) and beats nothing, until the holder hands it back (a clean stop)
// or has not beaten for 30 s (a crash): then it takes over, so a restart leaves no row
// behind. Before, the runner beat through fn_queue_heartbeat_tick like any executor, so any
// executor could keep a dead runner's iu-runner:<host> row fresh, and two runners with one
// id kept each other's silence hidden.
func TestSelfHeal_ARunnerRowIsBeatenOnlyByItsRunner(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	runner, runnerRole := login(t, db, "run", "dot_executor")
	exe, _ := login(t, db, "exe", "dot_executor")
	admin, _ := login(t, db, "adm", "workflow_admin")
	const a, b = "00000000-0000-0000-0000-00000000000a", "00000000-0000-0000-0000-00000000000b"
	beat := func(instance string, release bool) obj {
		return callJSON(t, runner, `SELECT fn_queue_runner_beat('iu-runner:h1', $1::uuid, 'ok', '{"pid": 7}', $2)`, instance, release)
	}
	out := beat(a, false)
	if out["beat"] != true || out["created"] != true || out["owner_role"] != runnerRole || out["registered_via"] != "runner" {
		t.Fatalf("first beat: %v", out)
	}
	const refused = `{"refused": true, "reason": "beaten_by_its_runner"}`
	for _, stmt := range []string{
		`SELECT fn_queue_heartbeat_tick('iu-runner:h1', 'external_worker', 'ok', '{}')`,
		`SELECT fn_queue_heartbeat_write('iu-runner:h1')`,
	} {
		requireJSONEqual(t, callJSON(t, exe, stmt), refused)
		requireJSONEqual(t, callJSON(t, runner, stmt), refused)
	}
	requireJSONEqual(t, callJSON(t, admin, `SELECT fn_cut_heartbeat_ping('iu-runner:h1')`), refused)
	e := pgtest.RequireSQLState(t, callErr(t, exe, `SELECT fn_queue_runner_beat('iu-runner:h1', $1::uuid)`, b), "42501")
	if !strings.Contains(e.Message, "bound to role") {
		t.Fatalf("another login: %s", e.Message)
	}

	// A second process of the same runner: held, nothing written.
	before := beatOf(t, db, "iu-runner:h1")
	out = beat(b, false)
	if out["beat"] != false || out["held"] != true {
		t.Fatalf("a second live runner must not share the row: %v", out)
	}
	held := out["held_by"].(map[string]any)
	if held["instance"] != a || held["session_user"] != runnerRole || held["pid"] != float64(7) {
		t.Fatalf("held_by must name the holder: %v", held)
	}
	if after := beatOf(t, db, "iu-runner:h1"); after != before {
		t.Fatalf("a held beat wrote: %+v -> %+v", before, after)
	}
	// The holder stops cleanly: the row is handed back and the next process takes it at once.
	if out = beat(a, true); out["released"] != true {
		t.Fatalf("release: %v", out)
	}
	if out = beat(b, false); out["beat"] != true || out["took_over"] != false {
		t.Fatalf("after a release the next runner beats at once: %v", out)
	}
	// The holder crashes (no release): after 30 s without a beat it is taken over.
	db.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now() - interval '31 seconds' WHERE executor_id = 'iu-runner:h1'`)
	if out = beat(a, false); out["beat"] != true || out["took_over"] != true {
		t.Fatalf("a crashed holder's row is taken over after the lease: %v", out)
	}
	// A row a first tick created is not a runner's, and a route worker's name never is.
	callJSON(t, exe, `SELECT fn_queue_heartbeat_tick('squat', 'Agent')`)
	pgtest.RequireSQLState(t, callErr(t, runner, `SELECT fn_queue_runner_beat('squat', $1::uuid)`, a), "42501")
	callJSON(t, admin, `SELECT fn_iu_route_worker_register('w9')`)
	pgtest.RequireSQLState(t, callErr(t, runner, `SELECT fn_queue_runner_beat('w9', $1::uuid)`, a), "22023")
}
