package tests

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// producer creates a login role holding INSERT on event_outbox (however a DBA grants it)
// and its own schema, and opens a session as it.
func producer(t testing.TB, db *pgtest.DB) (*pgx.Conn, string) {
	t.Helper()
	role := "tp_" + db.Name
	id := pgx.Identifier{role}.Sanitize()
	db.Exec(t, `CREATE ROLE `+id+` LOGIN PASSWORD 'pw'`)
	// What sql/README.md tells a DBA to grant a direct-INSERT producer.
	db.Exec(t, pgtest.ProducerInsertGrant(id))
	db.Exec(t, pgtest.ProducerExecuteGrant(id))
	db.Exec(t, `CREATE SCHEMA evil AUTHORIZATION `+id)
	t.Cleanup(func() {
		c := context.Background()
		_, _ = db.Pool.Exec(c, `DROP SCHEMA IF EXISTS evil CASCADE`)
		_, _ = db.Pool.Exec(c, `DROP OWNED BY `+id)
		_, _ = db.Pool.Exec(c, `DROP ROLE IF EXISTS `+id)
	})
	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'prod') ON CONFLICT DO NOTHING`)
	return db.ConnAs(t, role, "pw"), role
}

// Rule 5a: a producer cannot hide or halt routing through txid. The stored txid is always
// the inserting transaction's: a past value (the event would sort behind every consumer's
// position, the backlog reading 0) and a future one (every worker of the domain failing
// until an admin rebases) are refused; without one, the row carries its own transaction.
func TestTrust_ProducerCannotChooseTxid(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	p, _ := producer(t, db)
	for _, txid := range []string{"3", "900000000"} {
		_, err := p.Exec(ctx(t), `INSERT INTO event_outbox (event_domain, event_type, event_stream, txid)
		                          VALUES ('iu', 'prod', 's', $1::xid8)`, txid)
		e := requireSQLState(t, err, "23514")
		if e.ConstraintName != "event_outbox_txid_is_inserter" {
			t.Fatalf("txid %s: refused by %q, want event_outbox_txid_is_inserter", txid, e.ConstraintName)
		}
	}
	tx, err := p.Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx(t))
	if _, err := tx.Exec(ctx(t), `INSERT INTO event_outbox (event_domain, event_type, event_stream)
	                              VALUES ('iu', 'prod', 's')`); err != nil {
		t.Fatal(err)
	}
	// Naming its own transaction explicitly is allowed (it is the same value).
	if _, err := tx.Exec(ctx(t), `INSERT INTO event_outbox (event_domain, event_type, event_stream, txid)
	                              VALUES ('iu', 'prod', 's', pg_current_xact_id())`); err != nil {
		t.Fatal(err)
	}
	var mine string
	if err := tx.QueryRow(ctx(t), `SELECT pg_current_xact_id()::text`).Scan(&mine); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx(t)); err != nil {
		t.Fatal(err)
	}
	var n, all int
	db.QueryRow(t, `SELECT count(*) FILTER (WHERE txid = $1::xid8), count(*) FROM event_outbox WHERE event_type = 'prod'`,
		[]any{mine}, &n, &all)
	if n != 2 || all != 2 {
		t.Fatalf("a producer's rows must carry its own transaction id: %d of %d do", n, all)
	}
}

// Rule 5b and 7: payload hygiene holds whatever the caller's search_path holds. A producer
// creates its own @? operators (for (jsonb, text) and (jsonb, jsonpath), both answering
// "no match") in a schema before and after public; a denylisted key is still refused by
// the table's CHECK, and keys match whatever their letter case (Token, PASSWORD).
func TestTrust_HygieneHoldsWhateverTheSearchPath(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	p, _ := producer(t, db)
	for _, stmt := range []string{
		`CREATE FUNCTION evil.never_t(jsonb, text) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT false'`,
		`CREATE FUNCTION evil.never_p(jsonb, jsonpath) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT false'`,
		`CREATE OPERATOR evil.@? (LEFTARG = jsonb, RIGHTARG = text, FUNCTION = evil.never_t)`,
		`CREATE OPERATOR evil.@? (LEFTARG = jsonb, RIGHTARG = jsonpath, FUNCTION = evil.never_p)`,
	} {
		if _, err := p.Exec(ctx(t), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for _, path := range []string{"evil, public", "public, evil", "evil, pg_catalog, public"} {
		if _, err := p.Exec(ctx(t), `SELECT set_config('search_path', $1, false)`, path); err != nil {
			t.Fatal(err)
		}
		for _, payload := range []string{`{"token": "x"}`, `{"a": [{"b": {"password": 1}}]}`, `{"Token": "x"}`, `{"a": {"PASSWORD": 1}}`, `{"Personal_Data": {}}`} {
			_, err := p.Exec(ctx(t), `INSERT INTO event_outbox (event_domain, event_type, event_stream, safe_payload)
			                          VALUES ('iu', 'prod', 's', $1::jsonb)`, payload)
			e := requireSQLState(t, err, "23514")
			if e.ConstraintName != "event_outbox_safe_payload_hygiene" {
				t.Fatalf("path %s, payload %s: refused by %q", path, payload, e.ConstraintName)
			}
		}
		// Clean payloads (keys that merely contain a denylisted word) still pass.
		if _, err := p.Exec(ctx(t), `INSERT INTO event_outbox (event_domain, event_type, event_stream, safe_payload)
		                             VALUES ('iu', 'prod', 's', '{"tokenizer": 1, "body_length": 2, "a": ["token"]}')`); err != nil {
			t.Fatalf("path %s: a clean payload was refused: %v", path, err)
		}
	}
	// fn_iu_emit_event refuses the mixed-case key too, with the offending path.
	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'hyg2')`)
	_, err := db.Pool.Exec(ctx(t), `SELECT fn_iu_emit_event('iu', 'hyg2', 's', 'standard', 'info', NULL, NULL, '{"a": {"SeCrEt": 1}}')`)
	e := requireSQLState(t, err, "22023")
	if !strings.Contains(e.Message, "$.a.SeCrEt") {
		t.Fatalf("message must name the path: %s", e.Message)
	}
}

// Rule 9: route dead letters are as immutable as job dead letters. The event they kept and
// their identity never change, for the owner too (IU001); only the resolution and the
// failure counters a failed replay moves may, and the resolving login is stamped.
func TestTrust_RouteDeadLetterIsImmutableExceptResolution(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	var id string
	db.QueryRow(t, `INSERT INTO iu_route_dead_letter (worker_name, event_id, event_domain, event_type, event_stream,
	                                                  route_key, idempotency_key, event_snapshot, error_code, error_message)
	                VALUES ('w', gen_random_uuid(), 'iu', 't', 's', 'r', 'k1', '{"id": 1}', 'E1', 'boom')
	                RETURNING id::text`, nil, &id)
	for _, set := range []string{
		`event_snapshot = '{"id": 2}'`, `idempotency_key = 'k2'`, `event_id = gen_random_uuid()`,
		`worker_name = 'other'`, `event_domain = 'x'`, `event_type = 'x'`, `event_stream = 'x'`,
		`route_key = 'x'`, `first_failed_at = now() - interval '1 day'`, `id = gen_random_uuid()`,
		`resolved_session_user = 'forged'`,
	} {
		_, err := db.Pool.Exec(ctx(t), `UPDATE iu_route_dead_letter SET `+set+` WHERE id = $1`, id)
		if set == `resolved_session_user = 'forged'` {
			// Not an error: the stamp is the trigger's, whatever the statement says.
			if err != nil {
				t.Fatalf("%s: %v", set, err)
			}
			continue
		}
		requireSQLState(t, err, "IU001")
	}
	db.Exec(t, `UPDATE iu_route_dead_letter SET failed_attempts = failed_attempts + 1, last_failed_at = now(),
	                                            error_code = 'E2', error_message = 'again' WHERE id = $1`, id)
	db.Exec(t, `UPDATE iu_route_dead_letter SET resolved_at = now(), resolution = 'manual', resolved_by = 'claimed-ops' WHERE id = $1`, id)
	var snapshot, resolvedBy, stamped string
	var attempts int
	db.QueryRow(t, `SELECT event_snapshot::text, failed_attempts, resolved_by, coalesce(resolved_session_user, '')
	                  FROM iu_route_dead_letter WHERE id = $1`, []any{id}, &snapshot, &attempts, &resolvedBy, &stamped)
	var me string
	db.QueryRow(t, `SELECT session_user::text`, nil, &me)
	if snapshot != `{"id": 1}` || attempts != 2 || resolvedBy != "claimed-ops" || stamped != me {
		t.Fatalf("after allowed updates: snapshot %s attempts %d resolved_by %s resolved_session_user %q (want the login %q)",
			snapshot, attempts, resolvedBy, stamped, me)
	}
}

// Rule 2 (audit): a cursor reset keeps the actor the caller claims (reset_by) and records
// the login that really did it (reset_session_user), so a spoofed app.actor is visible.
func TestTrust_CursorResetRecordsTheLogin(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	role := "ta_" + db.Name
	id := pgx.Identifier{role}.Sanitize()
	db.Exec(t, `CREATE ROLE `+id+` LOGIN PASSWORD 'pw' IN ROLE workflow_admin`)
	t.Cleanup(func() { _, _ = db.Pool.Exec(context.Background(), `DROP ROLE IF EXISTS `+id) })
	admin := db.ConnAs(t, role, "pw")
	for _, stmt := range []string{`SELECT fn_iu_route_worker_register('w_audit')`, `SET app.actor = 'someone-else'`,
		`SELECT fn_iu_route_worker_reset_cursor('w_audit')`} {
		if _, err := admin.Exec(ctx(t), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var regSession, resetBy, resetSession string
	db.QueryRow(t, `SELECT registered_session_user, coalesce(reset_by, ''), coalesce(reset_session_user, '')
	                  FROM iu_route_worker_cursor WHERE worker_name = 'w_audit'`, nil, &regSession, &resetBy, &resetSession)
	if regSession != role || resetBy != "someone-else" || resetSession != role {
		t.Fatalf("registered_session_user %q, reset_by %q, reset_session_user %q; want %q, the claim, %q",
			regSession, resetBy, resetSession, role, role)
	}
}
