package queuehealth

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Trust boundaries inside the allowed functions: executors (often automated agents) and
// producers are callers that may make mistakes on purpose. Every test here logs in as a
// real role (session_user is that role), never SET ROLE on the superuser session.

// login creates a login role (member of the given groups) and opens a session as it.
func login(t testing.TB, db *pgtest.DB, suffix string, groups ...string) (*pgx.Conn, string) {
	t.Helper()
	role := "qt_" + suffix + "_" + db.Name
	db.Exec(t, `CREATE ROLE `+pgx.Identifier{role}.Sanitize()+` LOGIN PASSWORD 'pw'`)
	for _, g := range groups {
		db.Exec(t, `GRANT `+pgx.Identifier{g}.Sanitize()+` TO `+pgx.Identifier{role}.Sanitize())
	}
	t.Cleanup(func() {
		c := ctx(t)
		_, _ = db.Pool.Exec(c, `DROP OWNED BY `+pgx.Identifier{role}.Sanitize())
		_, _ = db.Pool.Exec(c, `DROP ROLE IF EXISTS `+pgx.Identifier{role}.Sanitize())
	})
	return db.ConnAs(t, role, "pw"), role
}

type beatState struct {
	At    time.Time
	Ticks int
}

func beatOf(t testing.TB, db *pgtest.DB, id string) beatState {
	t.Helper()
	var b beatState
	db.QueryRow(t, `SELECT last_beat_at, ticks_total FROM queue_heartbeat WHERE executor_id = $1`, []any{id}, &b.At, &b.Ticks)
	return b
}

const refusal = `{"refused": true, "reason": "protected_legacy_silent_passive"}`

// Rule 1: no false heal of a protected executor through any path. fn_queue_heartbeat_tick
// and fn_queue_heartbeat_write refuse iu_outbound_default (always) and the configured
// protected ids with the ping's refusal JSON and write nothing, so the next stale-check
// reports no recovery; only a real run of the route worker of that name beats it.
func TestTrust_ProtectedExecutorIsNeverHealedByACaller(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	setConfig(t, db, "queue.heartbeat.stale_threshold_seconds", "0")
	exe, _ := login(t, db, "exe", "dot_executor")

	// Not yet registered: the tick primitive must not create the protected row either.
	requireJSONEqual(t, callJSON(t, exe, `SELECT fn_queue_heartbeat_tick('iu_outbound_default', 'external_worker', 'ok', '{}')`), refusal)
	if n := count(t, db, `SELECT count(*) FROM queue_heartbeat`); n != 0 {
		t.Fatalf("a refused tick wrote %d rows", n)
	}

	// Registered by the route worker, silent, alerted.
	db.Exec(t, `SELECT fn_iu_route_worker_register('iu_outbound_default')`)
	silence(t, db, "iu_outbound_default", 3600)
	if out := staleCheck(t, db.Pool); num(t, out, "emitted") != 1 {
		t.Fatalf("the silent protected executor must be alerted: %v", out)
	}
	before := beatOf(t, db, "iu_outbound_default")
	for _, stmt := range []string{
		`SELECT fn_queue_heartbeat_tick('iu_outbound_default', 'external_worker', 'ok', '{}')`,
		`SELECT fn_queue_heartbeat_tick('iu_outbound_default', 'PG_worker')`,
		`SELECT fn_queue_heartbeat_write('iu_outbound_default')`,
		`SELECT fn_queue_heartbeat_write('iu_outbound_default', '{"x": 1}', 'route-worker')`,
	} {
		requireJSONEqual(t, callJSON(t, exe, stmt), refusal)
	}
	if after := beatOf(t, db, "iu_outbound_default"); after != before {
		t.Fatalf("a refused beat moved the protected row: %+v -> %+v", before, after)
	}
	if out := staleCheck(t, db.Pool); num(t, out, "recovered") != 0 {
		t.Fatalf("a refused beat must not be reported as a recovery: %v", out)
	}

	// The configured protected set is refused by tick and write too.
	register(t, db, "legacy_a", 10, 30)
	setConfig(t, db, "queue.heartbeat.protected_executors", "legacy_b,  legacy_a")
	requireJSONEqual(t, callJSON(t, exe, `SELECT fn_queue_heartbeat_write('legacy_a')`), refusal)
	requireJSONEqual(t, callJSON(t, exe, `SELECT fn_queue_heartbeat_tick('legacy_a', 'external_worker')`), refusal)
	if b := beatOf(t, db, "legacy_a"); b.Ticks != 0 {
		t.Fatalf("configured protected executor was beaten: %+v", b)
	}

	// Real work heals: a run of the route worker of that name beats its own row.
	callJSON(t, exe, `SELECT fn_iu_route_worker_run('iu_outbound_default')`)
	if after := beatOf(t, db, "iu_outbound_default"); after.Ticks != before.Ticks+1 || !after.At.After(before.At) {
		t.Fatalf("the route worker's own run must beat its row: %+v -> %+v", before, after)
	}
	if out := staleCheck(t, db.Pool); num(t, out, "recovered") != 1 {
		t.Fatalf("a real run is a recovery: %v", out)
	}
}

// Rule 2: an executor bound to a role (fn_queue_heartbeat_register's p_owner_role) is
// beaten only by sessions whose login is a member of that role; others get 42501 and
// nothing is written. Unbound executors keep today's behaviour. The audit columns keep the
// claimed actor and record the login next to it, so a spoofed p_actor is visible.
func TestTrust_BoundExecutorBeatenOnlyByItsRole(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	grp := "qt_grp_" + db.Name
	db.Exec(t, `CREATE ROLE `+pgx.Identifier{grp}.Sanitize()+` NOLOGIN`)
	t.Cleanup(func() { _, _ = db.Pool.Exec(ctx(t), `DROP ROLE IF EXISTS `+pgx.Identifier{grp}.Sanitize()) })
	owner, ownerRole := login(t, db, "own", "dot_executor", grp)
	other, otherRole := login(t, db, "oth", "dot_executor")
	admin, adminRole := login(t, db, "adm", "workflow_admin")

	out := callJSON(t, admin, `SELECT fn_queue_heartbeat_register('bound_x', 'Agent', '{iu}', 10, 30, 'someone-else', $1)`, grp)
	if out["owner_role"] != grp || out["registered_by"] != "someone-else" || out["registered_session_user"] != adminRole {
		t.Fatalf("register must store the owner and both the claimed actor and the login: %v", out)
	}
	before := beatOf(t, db, "bound_x")
	for _, stmt := range []string{
		`SELECT fn_queue_heartbeat_write('bound_x', '{}', $1)`,
		`SELECT fn_queue_heartbeat_tick('bound_x', 'Agent', 'ok', '{}')`,
	} {
		var err error
		if strings.Contains(stmt, "$1") {
			err = callErr(t, other, stmt, ownerRole)
		} else {
			err = callErr(t, other, stmt)
		}
		e := pgtest.RequireSQLState(t, err, "42501")
		if !strings.Contains(e.Message, "bound to role") || !strings.Contains(e.Message, otherRole) {
			t.Fatalf("refusal must say the executor is bound and name the login: %s", e.Message)
		}
	}
	if after := beatOf(t, db, "bound_x"); after != before {
		t.Fatalf("a refused beat wrote: %+v -> %+v", before, after)
	}

	// A member of the owning role beats; the claimed actor is kept, the login recorded.
	out = callJSON(t, owner, `SELECT fn_queue_heartbeat_write('bound_x', '{}', 'spoofed-actor')`)
	if out["last_beat_by"] != "spoofed-actor" || out["last_beat_session_user"] != ownerRole {
		t.Fatalf("audit must show the claim and the login: %v", out)
	}
	callJSON(t, owner, `SELECT fn_queue_heartbeat_tick('bound_x', 'Agent')`)
	if b := beatOf(t, db, "bound_x"); b.Ticks != 2 {
		t.Fatalf("owner's beats: ticks %d, want 2", b.Ticks)
	}

	// Unbound executors: any dot_executor, as before.
	register(t, db, "free_y", 10, 30)
	callJSON(t, other, `SELECT fn_queue_heartbeat_write('free_y')`)

	// Pause records the login too.
	out = callJSON(t, admin, `SELECT fn_queue_heartbeat_pause('bound_x', 'maintenance', 'ops-claimed')`)
	if out["paused_by"] != "ops-claimed" || out["paused_session_user"] != adminRole {
		t.Fatalf("pause audit: %v", out)
	}

	// An owning role that does not exist is a clear 22023.
	e := pgtest.RequireSQLState(t, callErr(t, admin,
		`SELECT fn_queue_heartbeat_register('bound_z', 'Agent', '{iu}', 10, 30, 'ops', 'no_such_role_qt')`), "22023")
	if !strings.HasPrefix(e.Message, "fn_queue_heartbeat_register: p_owner_role") {
		t.Fatalf("message: %s", e.Message)
	}
}

// Rule 3: a forged alert does not silence a real one. system/queue_worker_silent and
// system/queue_worker_recovered are written only by the package: fn_iu_emit_event refuses
// them to an executor, the table refuses them to a producer with INSERT (even dated
// 9999-01-01; the type names are reserved in every domain), and the stale-check does not read alerts back from event_outbox, so even a
// forged row that got in (written here as the superuser) suppresses nothing.
func TestTrust_ForgedAlertDoesNotSuppressARealOne(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	setConfig(t, db, "queue.heartbeat.stale_threshold_seconds", "0")
	register(t, db, "victim", 10, 30)
	silence(t, db, "victim", 45)
	exe, _ := login(t, db, "exe", "dot_executor")
	producer, producerRole := login(t, db, "prod")
	db.Exec(t, pgtest.ProducerInsertGrant(pgx.Identifier{producerRole}.Sanitize()))
	db.Exec(t, pgtest.ProducerExecuteGrant(pgx.Identifier{producerRole}.Sanitize()))

	for _, typ := range []string{"queue_worker_silent", "queue_worker_recovered"} {
		e := pgtest.RequireSQLState(t, callErr(t, exe,
			`SELECT fn_iu_emit_event('system', $1, 'alert', 'immediate', 'warning', 'queue_heartbeat', 'victim', '{}')`, typ), "42501")
		if !strings.HasPrefix(e.Message, "fn_iu_emit_event: system/"+typ+" events are written only by the package") {
			t.Fatalf("emit refusal: %s", e.Message)
		}
		// occurred_at, not created_at: the producer's grant leaves created_at to the log, and a
		// refusal for that column would hide whether the alert rule itself holds.
		e = pgtest.RequireSQLState(t, callErr(t, producer,
			`INSERT INTO event_outbox (event_domain, event_type, event_stream, delivery_lane, event_severity,
			                           event_subject_table, event_subject_ref, occurred_at)
			 VALUES ('system', $1, 'alert', 'immediate', 'critical', 'queue_heartbeat', 'victim', '9999-01-01')`, typ), "42501")
		if !strings.HasPrefix(e.Message, "fn_iu_event_outbox_package_only: "+typ+" events are written only by the package") {
			t.Fatalf("direct insert refusal: %s", e.Message)
		}
	}
	// Neither can reach the alert state.
	pgtest.RequireSQLState(t, callErr(t, exe, `UPDATE queue_stale_alert SET last_critical_at = '9999-01-01'`), "42501")
	pgtest.RequireSQLState(t, callErr(t, producer, `UPDATE queue_stale_alert SET last_critical_at = '9999-01-01'`), "42501")

	// A forged row that got in anyway (restored, or written by someone trusted by mistake).
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream, delivery_lane, event_severity,
	                                      event_subject_table, event_subject_ref, created_at)
	            VALUES ('system', 'queue_worker_silent', 'alert', 'immediate', 'critical', 'queue_heartbeat', 'victim', '9999-01-01')`)
	out := staleCheck(t, exe)
	if num(t, out, "emitted") != 1 || num(t, out, "suppressed") != 0 {
		t.Fatalf("the victim's real silence must be alerted despite forgeries: %v", out)
	}
	if n := count(t, db, `SELECT count(*) FROM event_outbox WHERE event_type = 'queue_worker_silent'
	                         AND event_subject_ref = 'victim' AND created_at < '9999-01-01'`); n != 1 {
		t.Fatalf("real alerts for the victim: %d, want 1", n)
	}
}

// Rule 4: a held row lock does not blind the stale-check. An executor beats inside an open
// transaction and stays idle in it (its heartbeat row locked, the new beat uncommitted);
// its committed beat is stale, so one stale-check call alerts it, without waiting on the
// lock; after the executor commits, the next check reports the recovery.
func TestTrust_HeldHeartbeatLockDoesNotBlindTheStaleCheck(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	setConfig(t, db, "queue.heartbeat.stale_threshold_seconds", "0")
	register(t, db, "exec_lock", 10, 30)
	silence(t, db, "exec_lock", 45)
	exe, _ := login(t, db, "exe", "dot_executor")
	checker, _ := login(t, db, "chk", "dot_executor")

	tx, err := exe.Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx(t))
	callJSON(t, tx, `SELECT fn_queue_heartbeat_write('exec_lock', '{}', 'w')`)
	// Prove the lock is really held: another session cannot lock the row.
	if _, err := db.Pool.Exec(ctx(t), `SELECT 1 FROM queue_heartbeat WHERE executor_id = 'exec_lock' FOR UPDATE NOWAIT`); err == nil {
		t.Fatal("the executor's transaction must hold the heartbeat row lock")
	}

	if _, err := checker.Exec(ctx(t), `SET statement_timeout = '5s'`); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	out := staleCheck(t, checker)
	if took := time.Since(began); num(t, out, "emitted") != 1 || num(t, out, "skipped_locked") != 0 || took > 2*time.Second {
		t.Fatalf("check while the executor holds its row (%v): %v", took, out)
	}
	if err := tx.Commit(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if out = staleCheck(t, checker); num(t, out, "recovered") != 1 {
		t.Fatalf("after the commit the beat is a recovery: %v", out)
	}
}

// Rule 7: bad input stays a clear error. Every name and id the heartbeat functions take is
// bounded (a 2,690-byte or 1 MB id is 22023 with the function's prefix, never a 54000 from
// an index) and blank is the same as empty everywhere.
func TestTrust_BadNamesAreClearErrors(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	register(t, db, "exec_ok", 10, 30)
	long := strings.Repeat("x", 2690)
	huge := strings.Repeat("y", 1<<20)
	cases := []struct{ fn, sql string }{
		{"fn_queue_heartbeat_register", `SELECT fn_queue_heartbeat_register($1, 'DOT', '{}', 10, 30)`},
		{"fn_queue_heartbeat_write", `SELECT fn_queue_heartbeat_write($1)`},
		{"fn_queue_heartbeat_tick", `SELECT fn_queue_heartbeat_tick($1, 'DOT')`},
		{"fn_queue_heartbeat_pause", `SELECT fn_queue_heartbeat_pause($1, 'r')`},
		{"fn_queue_heartbeat_resume", `SELECT fn_queue_heartbeat_resume($1)`},
		{"fn_cut_heartbeat_ping", `SELECT fn_cut_heartbeat_ping($1)`},
		{"fn_iu_emit_event", `SELECT fn_iu_emit_event($1, 't', 's')`},
	}
	for _, c := range cases {
		for _, v := range []string{long, huge, "   ", " \t\n"} {
			e := pgtest.RequireSQLState(t, callErr(t, db.Pool, c.sql, v), "22023")
			if !strings.HasPrefix(e.Message, c.fn+": ") {
				t.Errorf("%s with a %d-byte name: message %q lacks the prefix", c.fn, len(v), e.Message)
			}
		}
	}
	for _, sql := range []string{
		`SELECT fn_queue_heartbeat_write('exec_ok', '{}', $1)`,
		`SELECT fn_queue_heartbeat_register('exec_ok', 'DOT', ARRAY[$1], 10, 30)`,
		`SELECT fn_queue_heartbeat_register('exec_ok', 'DOT', '{}', 10, 30, 'ops', $1)`,
	} {
		pgtest.RequireSQLState(t, callErr(t, db.Pool, sql, huge), "22023")
	}
	pgtest.RequireSQLState(t, callErr(t, db.Pool, `SELECT fn_queue_heartbeat_register('exec_ok', 'DOT', ARRAY['  '], 10, 30)`), "22023")
	if n := count(t, db, `SELECT count(*) FROM queue_heartbeat`); n != 1 {
		t.Fatalf("refused calls wrote rows: %d", n)
	}
}
