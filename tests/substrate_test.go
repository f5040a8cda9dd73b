package tests

import (
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule: event_outbox is append-only — UPDATE, DELETE (and TRUNCATE) are rejected.
func TestSubstrate_EventOutboxIsAppendOnly(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	// Rule: every column but domain, type and stream has a default.
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 'x', 's')`)

	for name, stmt := range map[string]string{
		"update":   `UPDATE event_outbox SET event_stream = 'changed'`,
		"delete":   `DELETE FROM event_outbox`,
		"truncate": `TRUNCATE event_outbox`,
	} {
		_, err := db.Pool.Exec(ctx(t), stmt)
		e := requireSQLState(t, err, "IU001")
		if e.Hint == "" {
			t.Errorf("%s: want a HINT on the append-only refusal", name)
		}
	}
	var n int
	db.QueryRow(t, `SELECT count(*) FROM event_outbox WHERE event_stream = 's'`, nil, &n)
	if n != 1 {
		t.Fatalf("the row must be unchanged, found %d", n)
	}
}

// Rule: fn_iu_emit_event refuses an unregistered (domain, type) with a clear error.
func TestSubstrate_EmitRejectsUnregisteredType(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	_, err := db.Pool.Exec(ctx(t), `SELECT fn_iu_emit_event('iu', 'never_registered', 'main')`)
	e := requireSQLState(t, err, "22023")
	if want := "fn_iu_emit_event: event type iu/never_registered is not registered"; e.Message != want {
		t.Errorf("message = %q, want %q", e.Message, want)
	}
	if e.Hint == "" {
		t.Error("want a HINT telling how to register the type")
	}

	// A registered type emits.
	var id string
	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'registered_here')`)
	db.QueryRow(t, `SELECT fn_iu_emit_event('iu', 'registered_here', 'alert')::text`, nil, &id)
	if id == "" {
		t.Fatal("emit of a registered type returned no id")
	}
}

// Rule: denylisted payload keys are refused at any depth — top level, nested objects,
// inside arrays — by fn_iu_emit_event (22023) and by the table's CHECK on direct inserts.
func TestSubstrate_PayloadHygieneAtAnyDepth(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	db.Exec(t, `INSERT INTO event_type_registry (event_domain, event_type) VALUES ('iu', 'hyg')`)

	denied := []string{"body", "content", "raw", "vector", "embedding", "secret", "token", "password", "ssn", "personal_data"}
	for _, key := range denied {
		for shape, payload := range map[string]string{
			"top":    `{"` + key + `": 1}`,
			"nested": `{"a": {"b": {"` + key + `": null}}}`,
			"array":  `{"a": [1, {"x": [{"` + key + `": "v"}]}]}`,
		} {
			_, err := db.Pool.Exec(ctx(t), `SELECT fn_iu_emit_event('iu', 'hyg', 's', p_safe_payload => $1::jsonb)`, payload)
			requireSQLState(t, err, "22023")
			_, err = db.Pool.Exec(ctx(t), `INSERT INTO event_outbox (event_domain, event_type, event_stream, safe_payload) VALUES ('iu', 'hyg', 's', $1::jsonb)`, payload)
			requireSQLState(t, err, "23514") // check_violation
			_ = shape
		}
	}
	// A denylisted word as a value, or as part of a longer key, is fine.
	db.Exec(t, `SELECT fn_iu_emit_event('iu', 'hyg', 's', p_safe_payload => '{"kind": "token", "token_count": 3, "list": ["secret"]}')`)

	// The error names where the key sits.
	_, err := db.Pool.Exec(ctx(t), `SELECT fn_iu_emit_event('iu', 'hyg', 's', p_safe_payload => '{"a": [{"token": 1}]}')`)
	if e := requireSQLState(t, err, "22023"); e.Message != "fn_iu_emit_event: p_safe_payload carries denylisted keys at $.a[0].token" {
		t.Errorf("message = %q", e.Message)
	}
}

// Rule: the gates are fail-closed — open only when the value is exactly 'true'.
func TestSubstrate_GatesFailClosed(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	gates := map[string]string{
		"iu_core.routes_enabled":       "fn_iu_core_routes_enabled",
		"iu_core.route_worker_enabled": "fn_iu_route_worker_enabled",
	}
	for key, fn := range gates {
		check := func(state string, want bool) {
			t.Helper()
			var got bool
			db.QueryRow(t, `SELECT `+fn+`()`, nil, &got)
			if got != want {
				t.Errorf("%s with %s: got %v, want %v", fn, state, got, want)
			}
		}
		db.Exec(t, `DELETE FROM dot_config WHERE key = $1`, key)
		check("key missing", false)
		for _, v := range []string{"false", "TRUE", "True", " true", "true ", "yes", "1", "on", ""} {
			db.Exec(t, `INSERT INTO dot_config (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, key, v)
			check("value "+`"`+v+`"`, false)
		}
		db.Exec(t, `UPDATE dot_config SET value = 'true' WHERE key = $1`, key)
		check(`value "true"`, true)
	}
}

// Rule: iu_route_attempt has UNIQUE (idempotency_key, attempt_no) for the attempts of one
// event (they share event_txid, the partition key) and is never changed.
func TestSubstrate_AttemptUniqueAndImmutable(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	var txid string
	db.QueryRow(t, `SELECT pg_current_xact_id()::text`, nil, &txid)
	ins := `INSERT INTO iu_route_attempt (event_ref, status, idempotency_key, attempt_no, event_txid) VALUES (gen_random_uuid(), 'skipped', 'k1', $1, $2::xid8)`
	db.Exec(t, ins, 1, txid)
	_, err := db.Pool.Exec(ctx(t), ins, 1, txid)
	requireSQLState(t, err, "23505")
	db.Exec(t, ins, 2, txid)
	_, err = db.Pool.Exec(ctx(t), `DELETE FROM iu_route_attempt`)
	requireSQLState(t, err, "IU001")
	_, err = db.Pool.Exec(ctx(t), `UPDATE iu_route_attempt SET status = 'sent'`)
	requireSQLState(t, err, "IU001")
}

// Rule: route_key is free text (unique); only 'none' is reserved, because it stands for
// "no route" inside idempotency keys (iu_wrk:{worker}:{route_key}:{event_id}).
func TestSubstrate_RouteKeyIsFreeTextButNotNone(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	db.Exec(t, `INSERT INTO iu_outbound_route (event_domain, event_type, event_stream, route_key)
	            VALUES ('iu', 'a', 's', 'iu/route a:b')`)
	_, err := db.Pool.Exec(ctx(t), `INSERT INTO iu_outbound_route (event_domain, event_type, event_stream, route_key)
	                                VALUES ('iu', 'b', 's', 'none')`)
	requireSQLState(t, err, "23514")
	_, err = db.Pool.Exec(ctx(t), `INSERT INTO iu_outbound_route (event_domain, event_type, event_stream, route_key)
	                                VALUES ('iu', 'c', 's', 'iu/route a:b')`)
	requireSQLState(t, err, "23505")
}
