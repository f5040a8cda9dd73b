package runtimescripts

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	sqlfiles "github.com/iu-core/event-worker/sql"

	"github.com/iu-core/event-worker/internal/pgtest"
)

const (
	activate = "060_route_worker_activate.sql"
	verifyW  = "070_route_worker_verification.sql"
	disable  = "080_route_worker_disable.sql"

	masterKey = "iu_core.routes_enabled"
	workerKey = "iu_core.route_worker_enabled"
)

// Rule: the three scripts exist on disk and are embedded in the runner
// binary (sqlfiles.Runtime), so the runner and psql run the same text.
func TestScripts_EmbeddedAndOnDisk(t *testing.T) {
	t.Parallel()
	for _, name := range []string{activate, verifyW, disable} {
		embedded, err := fs.ReadFile(sqlfiles.Runtime(), name)
		if err != nil {
			t.Fatalf("%s not embedded: %v", name, err)
		}
		if !strings.Contains(string(embedded), "ON_ERROR_STOP") {
			t.Errorf("%s should set ON_ERROR_STOP itself, for operators who forget -v", name)
		}
	}
}

// Rule: 060 registers iu_outbound_default (cursor on 'iu' + heartbeat row), leaves the
// worker gate 'false', and is idempotent: a second run succeeds and changes nothing —
// same cursor row, same gate row (not even its updated_at).
func TestActivate_RegistersAndIsIdempotent(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)

	first := mustRun(t, db, activate, false)
	if !strings.Contains(first.Stdout, "iu_outbound_default") {
		t.Errorf("060 should report the worker's state, got:\n%s", first.Stdout)
	}
	var domain string
	var registeredAt, gateChangedAt time.Time
	db.QueryRow(t, `SELECT event_domain, registered_at FROM iu_route_worker_cursor WHERE worker_name = 'iu_outbound_default'`,
		nil, &domain, &registeredAt)
	if domain != "iu" {
		t.Fatalf("cursor domain = %q, want iu", domain)
	}
	var kind string
	db.QueryRow(t, `SELECT executor_kind FROM queue_heartbeat WHERE executor_id = 'iu_outbound_default'`, nil, &kind)
	if kind != "PG_worker" {
		t.Errorf("heartbeat kind = %q, want PG_worker", kind)
	}
	db.QueryRow(t, `SELECT updated_at FROM dot_config WHERE key = $1`, []any{workerKey}, &gateChangedAt)

	second := mustRun(t, db, activate, false)
	if !strings.Contains(second.Stdout, "iu_outbound_default") {
		t.Errorf("second 060 should report the state too, got:\n%s", second.Stdout)
	}
	var cursors int
	var registeredAgain, gateChangedAgain time.Time
	db.QueryRow(t, `SELECT count(*), max(registered_at) FROM iu_route_worker_cursor`, nil, &cursors, &registeredAgain)
	if cursors != 1 || !registeredAgain.Equal(registeredAt) {
		t.Errorf("after a second activation: %d cursors registered at %v, want the one from %v", cursors, registeredAgain, registeredAt)
	}
	db.QueryRow(t, `SELECT updated_at FROM dot_config WHERE key = $1`, []any{workerKey}, &gateChangedAgain)
	if !gateChangedAgain.Equal(gateChangedAt) {
		t.Errorf("a second activation rewrote the gate row (updated_at %v -> %v)", gateChangedAt, gateChangedAgain)
	}
	if v, _ := gateValue(t, db, workerKey); v != "false" {
		t.Errorf("worker gate = %q after activation, want false", v)
	}
	var open bool
	db.QueryRow(t, `SELECT fn_iu_route_worker_enabled()`, nil, &open)
	if open {
		t.Error("fn_iu_route_worker_enabled() reads true after activation")
	}
}

// Rule: activation never opens a gate by itself — a missing worker key is created as
// 'false', an opened worker gate is closed again, the master gate is not touched, and
// with the gates as activation leaves them the worker is a gated no-op.
func TestActivate_NeverOpensAGate(t *testing.T) {
	t.Parallel()
	t.Run("missing keys", func(t *testing.T) {
		t.Parallel()
		db := pgtest.NewDB(t)
		db.Exec(t, `DELETE FROM dot_config WHERE key IN ($1, $2)`, masterKey, workerKey)
		mustRun(t, db, activate, false)
		if v, ok := gateValue(t, db, workerKey); !ok || v != "false" {
			t.Errorf("worker key = %q (present %v), want 'false'", v, ok)
		}
		if _, ok := gateValue(t, db, masterKey); ok {
			t.Error("activation must not create or touch the master gate")
		}
		var res string
		db.QueryRow(t, `SELECT fn_iu_route_worker_run('iu_outbound_default')::text`, nil, &res)
		if !strings.Contains(res, `"gated": true`) {
			t.Errorf("worker after activation should be gated, run returned %s", res)
		}
	})
	t.Run("opened worker gate", func(t *testing.T) {
		t.Parallel()
		db := pgtest.NewDB(t)
		db.Exec(t, `UPDATE dot_config SET value = 'true' WHERE key IN ($1, $2)`, masterKey, workerKey)
		mustRun(t, db, activate, false)
		if v, _ := gateValue(t, db, workerKey); v != "false" {
			t.Errorf("worker gate = %q, want activation to leave it 'false'", v)
		}
		if v, _ := gateValue(t, db, masterKey); v != "true" {
			t.Errorf("master gate = %q, activation must leave it as it was ('true')", v)
		}
	})
}

// Rule: 070 runs inside a READ ONLY transaction (here also under
// default_transaction_read_only=on, so any write would fail) and all ten checks W1–W10
// pass on an activated database — before and after the worker has done real work
// (attempts of every kind, a dead letter from the fail-closed seam).
func TestVerify_AllTenPassReadOnly(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	mustRun(t, db, activate, false)

	requireAllPass := func(stage string) {
		t.Helper()
		checks, r := verify(t, db)
		if r.Exit != 0 {
			t.Fatalf("%s: 070 exit %d\nstdout:\n%s\nstderr:\n%s", stage, r.Exit, r.Stdout, r.Stderr)
		}
		if len(checks) != 10 {
			t.Fatalf("%s: want 10 check rows, got %d:\n%s", stage, len(checks), r.Stdout)
		}
		for i, c := range checks {
			if want := fmt.Sprintf("W%d ", i+1); !strings.HasPrefix(c.Name, want) {
				t.Errorf("%s: row %d is %q, want it to start with %q", stage, i, c.Name, want)
			}
			if !c.Pass || c.Detail == "" {
				t.Errorf("%s: %s pass=%v detail=%q", stage, c.Name, c.Pass, c.Detail)
			}
		}
	}
	requireAllPass("fresh activation")

	// Real work: one route of each kind, events for each, gates open, one run.
	db.Exec(t, `INSERT INTO iu_outbound_route (event_domain, event_type, event_stream, route_key, enabled, dry_run) VALUES
		('iu', 'dry', 's', 'rk_dry', true, true),
		('iu', 'off', 's', 'rk_off', false, true),
		('iu', 'live', 's', 'rk_live', true, false)`)
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES
		('iu', 'dry', 's'), ('iu', 'off', 's'), ('iu', 'live', 's'), ('iu', 'unrouted', 's'), ('system', 'other', 's')`)
	db.Exec(t, `UPDATE dot_config SET value = 'true' WHERE key IN ($1, $2)`, masterKey, workerKey)
	var attempts, deadLetters int
	db.QueryRow(t, `SELECT (r->>'attempts_written')::int, (r->>'dead_lettered')::int
	                  FROM fn_iu_route_worker_run('iu_outbound_default') r`, nil, &attempts, &deadLetters)
	if attempts != 4 || deadLetters != 1 {
		t.Fatalf("worker wrote %d attempts and %d dead letters, want 4 and 1", attempts, deadLetters)
	}
	requireAllPass("after a run")

	// The read-only proof is real: the same session settings refuse a write.
	r := runScript(t, db, activate, true)
	if r.Exit == 0 || !strings.Contains(r.Stderr, "read-only transaction") {
		t.Fatalf("060 under default_transaction_read_only should fail with a read-only error, exit %d, stderr:\n%s", r.Exit, r.Stderr)
	}
}

// Rule: each check fails when its rule is broken, the failing row says why, the other
// rows still print, and psql exits non-zero (so cron or CI notices).
func TestVerify_EachCheckFailsWhenItsRuleBreaks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		id, rule string
		breakIt  string // run after 060 (if activate), as the database owner
		activate bool
		detail   string // substring of the failing row's detail
	}{
		{"W1", "the claim index is part of the substrate",
			`DROP INDEX event_outbox_domain_txid_idx`, true, "event_outbox_domain_txid_idx"},
		{"W2", "the three views are part of the package",
			`DROP VIEW v_iu_route_attempt_summary`, true, "v_iu_route_attempt_summary"},
		{"W3", "a gate reader that opens on a missing key is fail-open",
			`CREATE OR REPLACE FUNCTION fn_iu_route_worker_enabled() RETURNS boolean LANGUAGE sql STABLE
			   SECURITY DEFINER SET search_path = public, pg_temp AS
			   $$ SELECT coalesce((SELECT c.value = 'true' FROM dot_config c WHERE c.key = 'iu_core.route_worker_enabled'), true) $$`,
			true, "missing reads true"},
		{"W3", "a gate reader that opens on anything but 'false' is fail-open",
			`CREATE OR REPLACE FUNCTION fn_iu_core_routes_enabled() RETURNS boolean LANGUAGE sql STABLE
			   SECURITY DEFINER SET search_path = public, pg_temp AS
			   $$ SELECT coalesce((SELECT c.value <> 'false' FROM dot_config c WHERE c.key = 'iu_core.routes_enabled'), false) $$`,
			true, "TRUE reads true"},
		{"W3", "a gate reader that cannot be simulated is not proven fail-closed",
			`CREATE OR REPLACE FUNCTION fn_iu_route_worker_enabled() RETURNS boolean LANGUAGE plpgsql STABLE
			   SECURITY DEFINER SET search_path = public, pg_temp AS
			   $$ BEGIN RETURN coalesce((SELECT c.value = 'true' FROM dot_config c WHERE c.key = 'iu_core.route_worker_enabled'), false); END $$`,
			true, "cannot be simulated"},
		{"W4", "the default worker's cursor is seeded by 060", ``, false, "no cursor for iu_outbound_default"},
		{"W4", "a cursor position recorded in another cluster is not a seeded cursor",
			`UPDATE iu_route_worker_cursor SET system_identifier = 42 WHERE worker_name = 'iu_outbound_default'`, true, "another cluster"},
		{"W5", "UNIQUE (idempotency_key, attempt_no, event_txid) guards the attempts",
			`ALTER TABLE iu_route_attempt DROP CONSTRAINT iu_route_attempt_key_attempt_uq`, true, "iu_route_attempt(idempotency_key, attempt_no, event_txid)"},
		{"W6", "a disabled no-delete trigger makes dead letters deletable",
			`ALTER TABLE iu_route_dead_letter DISABLE TRIGGER trg_iu_route_dead_letter_no_delete`, true, "iu_route_dead_letter delete"},
		{"W7", "a delivery seam that returns instead of raising 0A000 is fail-open",
			`DO $$ DECLARE f record; BEGIN
			   FOR f IN SELECT p.oid, pg_get_function_arguments(p.oid) AS args, pg_get_function_result(p.oid) AS res
			              FROM pg_proc p WHERE p.proname = 'fn_iu_route_deliver' LOOP
			     EXECUTE format('CREATE OR REPLACE FUNCTION public.fn_iu_route_deliver(%s) RETURNS %s LANGUAGE plpgsql AS $b$BEGIN RETURN %s; END$b$',
			                    f.args, f.res, CASE WHEN f.res = 'void' THEN '' ELSE 'NULL' END);
			   END LOOP; END $$`, true, "returned instead of raising"},
		{"W8", "two attempts with the same (idempotency_key, attempt_no) are duplicates",
			`ALTER TABLE iu_route_attempt DROP CONSTRAINT iu_route_attempt_key_attempt_uq;
			 INSERT INTO iu_route_attempt (event_ref, status, idempotency_key, event_txid) VALUES
			   (gen_random_uuid(), 'skipped', 'iu_wrk:x:none:dup', pg_current_xact_id()),
			   (gen_random_uuid(), 'skipped', 'iu_wrk:x:none:dup', pg_current_xact_id())`,
			true, "1 duplicated"},
		{"W9", "PUBLIC may execute none of the package functions",
			`GRANT EXECUTE ON FUNCTION fn_iu_route_worker_run(text, integer) TO PUBLIC`, true, "PUBLIC executes 1 function(s): public.fn_iu_route_worker_run"},
		{"W9", "dot_executor must be able to run the worker",
			`REVOKE EXECUTE ON FUNCTION fn_iu_route_worker_run(text, integer) FROM dot_executor`, true, "dot_executor lacks EXECUTE"},
		{"W9", "executors reach the worker tables only through the functions",
			`GRANT INSERT ON iu_route_attempt TO dot_executor`, true, "dot_executor can INSERT public.iu_route_attempt"},
		{"W10", "an untrusted role that may CREATE in public could plant an overload run as the owner",
			`GRANT CREATE ON SCHEMA public TO PUBLIC`, true, "create_on_schema schema public (holder PUBLIC), fix: REVOKE CREATE ON SCHEMA public FROM PUBLIC;"},
		{"W10", "a function planted in public by an untrusted role stays dangerous after CREATE is revoked",
			`DO $$ BEGIN CREATE ROLE w10_planter NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
			 CREATE FUNCTION public.jsonb_build_object(text, boolean, text, text) RETURNS jsonb LANGUAGE sql AS 'SELECT NULL::jsonb';
			 ALTER FUNCTION public.jsonb_build_object(text, boolean, text, text) OWNER TO w10_planter`,
			true, "function public.jsonb_build_object(text,boolean,text,text) (holder w10_planter), fix: DROP FUNCTION public.jsonb_build_object(text,boolean,text,text);"},
		// Issue 21: a plant made while public was open, handed to a trusted owner after the
		// REVOKE (on 13/14 the owner that runs it must be a superuser), passed W10 because its
		// owner counted as trusted. W10 now reports what the package did not create, whoever
		// owns it: here an overload of an API function a caller reaches unqualified.
		{"W10", "a plant handed to a trusted owner is still a plant",
			`DO $$ BEGIN CREATE ROLE w10_planter NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
			 CREATE FUNCTION public.fn_queue_heartbeat_tick(varchar, text, text, jsonb) RETURNS jsonb LANGUAGE sql AS 'SELECT NULL::jsonb';
			 ALTER FUNCTION public.fn_queue_heartbeat_tick(varchar, text, text, jsonb) OWNER TO w10_planter;
			 ALTER FUNCTION public.fn_queue_heartbeat_tick(varchar, text, text, jsonb) OWNER TO CURRENT_USER`,
			true, "public.fn_queue_heartbeat_tick(character varying,text,text,jsonb) (holder "},
		{"W10", "an operator in public is not the package's, whoever owns it",
			`CREATE FUNCTION public.w10_eq(jsonb, text) RETURNS boolean LANGUAGE sql AS 'SELECT true';
			 CREATE OPERATOR public.= (LEFTARG = jsonb, RIGHTARG = text, FUNCTION = public.w10_eq)`,
			true, "foreign_operator public.=(jsonb,text)"},
		{"W10", "a function in iu_core the package did not create is reported",
			`CREATE FUNCTION iu_core.fn_iu_require_name(text, text, varchar) RETURNS void LANGUAGE sql AS 'SELECT NULL'`,
			true, "iu_core.fn_iu_require_name(text,text,character varying)"},
	}
	for _, c := range cases {
		t.Run(c.id+" "+c.rule, func(t *testing.T) {
			t.Parallel()
			db := pgtest.NewDB(t)
			if c.activate {
				mustRun(t, db, activate, false)
			}
			if c.breakIt != "" {
				db.Exec(t, c.breakIt)
			}
			checks, r := verify(t, db)
			if len(checks) != 10 {
				t.Fatalf("want 10 rows even when failing, got %d\nstdout:\n%s\nstderr:\n%s", len(checks), r.Stdout, r.Stderr)
			}
			got := checkByID(t, checks, c.id)
			if got.Pass {
				t.Fatalf("%s still passes after breaking its rule (%s): %s", c.id, c.rule, got.Detail)
			}
			if !strings.Contains(got.Detail, c.detail) {
				t.Errorf("%s detail %q does not say %q", c.id, got.Detail, c.detail)
			}
			if r.Exit == 0 || !strings.Contains(r.Stderr, "not all passing") {
				t.Errorf("a failing check must make psql exit non-zero with the reason; exit %d, stderr:\n%s", r.Exit, r.Stderr)
			}
		})
	}
}

// Rule: 080 closes the worker gate (creating the key when missing), reports the state,
// is idempotent, leaves the master gate alone, and the next worker run is a gated no-op
// that claims nothing and keeps the cursor where it was.
func TestDisable_ClosesTheWorkerGate(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	mustRun(t, db, activate, false)
	db.Exec(t, `UPDATE dot_config SET value = 'true' WHERE key IN ($1, $2)`, masterKey, workerKey)
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 'a', 's')`)
	var claimed int
	db.QueryRow(t, `SELECT (fn_iu_route_worker_run('iu_outbound_default')->>'claimed')::int`, nil, &claimed)
	if claimed != 1 {
		t.Fatalf("open worker claimed %d, want 1", claimed)
	}

	r := mustRun(t, db, disable, false)
	if !strings.Contains(r.Stdout, "worker_gate_open") {
		t.Errorf("080 should report the gate state, got:\n%s", r.Stdout)
	}
	if v, _ := gateValue(t, db, workerKey); v != "false" {
		t.Fatalf("worker gate = %q after 080, want false", v)
	}
	if v, _ := gateValue(t, db, masterKey); v != "true" {
		t.Errorf("080 must leave the master gate alone, it is %q", v)
	}

	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 'b', 's')`)
	var gated bool
	var runs, seen int64
	db.QueryRow(t, `SELECT (r->>'gated')::bool, (r->>'claimed')::int FROM fn_iu_route_worker_run('iu_outbound_default') r`,
		nil, &gated, &claimed)
	if !gated || claimed != 0 {
		t.Fatalf("after 080 the run should be gated and claim nothing, got gated=%v claimed=%d", gated, claimed)
	}
	db.QueryRow(t, `SELECT runs_total, events_seen FROM iu_route_worker_cursor WHERE worker_name = 'iu_outbound_default'`, nil, &runs, &seen)
	if seen != 1 {
		t.Errorf("events_seen = %d after the gated run, want it unchanged at 1", seen)
	}

	// Idempotent, and a missing key is written as an explicit 'false'.
	mustRun(t, db, disable, false)
	db.Exec(t, `DELETE FROM dot_config WHERE key = $1`, workerKey)
	mustRun(t, db, disable, false)
	if v, ok := gateValue(t, db, workerKey); !ok || v != "false" {
		t.Errorf("080 on a missing key: value %q present %v, want 'false'", v, ok)
	}
	// Verification still passes with the worker disabled.
	checks, vr := verify(t, db)
	if vr.Exit != 0 || len(checks) != 10 {
		t.Fatalf("070 after 080: exit %d, %d rows\n%s\n%s", vr.Exit, len(checks), vr.Stdout, vr.Stderr)
	}
}
