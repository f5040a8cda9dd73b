package routeworker

import (
	"strings"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// deadLetter routes one live (dry_run = false) event and returns its dead letter id and
// idempotency key.
func deadLetter(t *testing.T, db *pgtest.DB, worker string) (id, key string) {
	t.Helper()
	emit1(t, db.Pool, typLive)
	requireCounts(t, run(t, db.Pool, worker, 100), map[string]int{"dead_lettered": 1})
	db.QueryRow(t, `SELECT id::text, idempotency_key FROM iu_route_dead_letter ORDER BY first_failed_at DESC LIMIT 1`, nil, &id, &key)
	return id, key
}

func replay(t *testing.T, q querier, id string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := q.QueryRow(pgtest.Ctx(t), `SELECT fn_iu_route_dead_letter_replay($1::uuid)`, id).Scan(&m); err != nil {
		t.Fatalf("replay %s: %v", id, err)
	}
	return m
}

// Rule 11 (replay): a replay re-resolves the route as it is now and writes a fresh
// attempt with the same idempotency key and attempt_no = max + 1. Still failing →
// failed_attempts + 1 and last_failed_at moves, the row stays open; after the route is
// switched to dry_run the replay resolves the row (resolved_at, resolution, resolved_by =
// app.actor); a third replay returns {"replayed": false, "reason": "already_resolved"}.
func TestReplay_RetriesThenResolves(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	id, key := deadLetter(t, db, b.worker)
	var firstFailed time.Time
	db.QueryRow(t, `SELECT last_failed_at FROM iu_route_dead_letter WHERE id = $1`, []any{id}, &firstFailed)

	// Still failing: the seam is unbuilt.
	m := replay(t, db.Pool, id)
	if m["replayed"] != true || m["status"] != "failed" || m["resolved"] != false || m["error_code"] != "0A000" {
		t.Fatalf("replay while still failing: %v", m)
	}
	requireCounts(t, m, map[string]int{"attempt_no": 2, "failed_attempts": 2})
	var failed int
	var lastFailed time.Time
	var open bool
	db.QueryRow(t, `SELECT failed_attempts, last_failed_at, resolved_at IS NULL FROM iu_route_dead_letter WHERE id = $1`,
		[]any{id}, &failed, &lastFailed, &open)
	if failed != 2 || !lastFailed.After(firstFailed) || !open {
		t.Fatalf("after a failed replay: failed_attempts %d, last_failed_at %v (was %v), open %v", failed, lastFailed, firstFailed, open)
	}

	// The route is switched to dry-run: the replay resolves.
	db.Exec(t, `UPDATE iu_outbound_route SET dry_run = true WHERE route_key = 'r_live'`)
	conn := db.Conn(t)
	if _, err := conn.Exec(pgtest.Ctx(t), `SET app.actor = 'alice'`); err != nil {
		t.Fatal(err)
	}
	m = replay(t, conn, id)
	if m["replayed"] != true || m["status"] != "dry_run" || m["resolved"] != true || m["resolved_by"] != "alice" {
		t.Fatalf("replay after dry_run switch: %v", m)
	}
	requireCounts(t, m, map[string]int{"attempt_no": 3})
	var resolution, by string
	var resolvedSet bool
	db.QueryRow(t, `SELECT resolved_at IS NOT NULL, resolution, resolved_by FROM iu_route_dead_letter WHERE id = $1`,
		[]any{id}, &resolvedSet, &resolution, &by)
	if !resolvedSet || resolution == "" || by != "alice" {
		t.Fatalf("resolved row: resolved_at set %v, resolution %q, resolved_by %q", resolvedSet, resolution, by)
	}
	var statuses []string
	db.QueryRow(t, `SELECT array_agg(status || '#' || attempt_no ORDER BY attempt_no) FROM iu_route_attempt WHERE idempotency_key = $1`,
		[]any{key}, &statuses)
	if strings.Join(statuses, ",") != "failed#1,failed#2,dry_run#3" {
		t.Fatalf("attempts under %s: %v", key, statuses)
	}

	m = replay(t, db.Pool, id)
	if m["replayed"] != false || m["reason"] != "already_resolved" {
		t.Fatalf("replay of a resolved dead letter: %v", m)
	}
	if n := scalar(t, db, `SELECT count(*) FROM iu_route_attempt WHERE idempotency_key = $1`, key); n != 3 {
		t.Fatalf("already_resolved wrote an attempt: %d", n)
	}
	if n := scalar(t, db, `SELECT count(*) FROM v_iu_route_dead_letter_open`); n != 0 {
		t.Fatalf("%d open dead letters after resolve", n)
	}
}

// Rule 11: an unknown dead letter id is P0002 with the function name first.
func TestReplay_UnknownIDIsNoDataFound(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	_, err := db.Pool.Exec(pgtest.Ctx(t), `SELECT fn_iu_route_dead_letter_replay('00000000-0000-0000-0000-000000000001')`)
	e := pgtest.RequireSQLState(t, err, "P0002")
	if !strings.HasPrefix(e.Message, "fn_iu_route_dead_letter_replay: ") {
		t.Fatalf("message %q", e.Message)
	}
}

// Rule 11: dead letters are never deleted — DELETE and TRUNCATE are rejected
// with IU001; they are resolved instead.
func TestDeadLetter_DeleteIsRejected(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	deadLetter(t, db, b.worker)
	for _, stmt := range []string{`DELETE FROM iu_route_dead_letter`, `TRUNCATE iu_route_dead_letter`} {
		_, err := db.Pool.Exec(pgtest.Ctx(t), stmt)
		pgtest.RequireSQLState(t, err, "IU001")
	}
	if n := scalar(t, db, `SELECT count(*) FROM iu_route_dead_letter`); n != 1 {
		t.Fatalf("%d dead letters, want 1", n)
	}
}

// Rule: the delivery seam is unbuilt on purpose and fails closed with 0A000.
func TestDeliver_FailsClosed(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	_, err := db.Pool.Exec(pgtest.Ctx(t), `SELECT public.fn_iu_route_deliver('{}'::jsonb, 'r_live', 'outbound', 'k')`)
	e := pgtest.RequireSQLState(t, err, "0A000")
	if !strings.HasPrefix(e.Message, "fn_iu_route_deliver: ") {
		t.Fatalf("message %q", e.Message)
	}
}

// Rule 11 (replay re-resolves the route as it is now): with the route disabled the replay
// writes a "disabled" attempt and leaves the dead letter open (neither resolved nor counted
// as a failure); with a working delivery seam (a stub) it writes "sent" and resolves the row
// as replayed_sent.
func TestReplay_ReResolvesRouteAndResolvesOnSent(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	id, key := deadLetter(t, db, b.worker)

	db.Exec(t, `UPDATE iu_outbound_route SET enabled = false WHERE route_key = 'r_live'`)
	m := replay(t, db.Pool, id)
	if m["status"] != "disabled" || m["resolved"] != false {
		t.Fatalf("replay with the route disabled: %v", m)
	}
	requireCounts(t, m, map[string]int{"attempt_no": 2, "failed_attempts": 1})

	db.Exec(t, `UPDATE iu_outbound_route SET enabled = true WHERE route_key = 'r_live'`)
	db.Exec(t, `
		CREATE OR REPLACE FUNCTION public.fn_iu_route_deliver(p_event_snapshot jsonb, p_route_key text, p_route_kind text, p_idempotency_key text)
		RETURNS jsonb LANGUAGE plpgsql AS $$ BEGIN RETURN jsonb_build_object('delivered', p_idempotency_key); END $$;`)
	m = replay(t, db.Pool, id)
	if m["status"] != "sent" || m["resolved"] != true || m["resolution"] != "replayed_sent" || m["idempotency_key"] != key {
		t.Fatalf("replay through a working seam: %v", m)
	}
	requireCounts(t, m, map[string]int{"attempt_no": 3})
	var detail string
	db.QueryRow(t, `SELECT detail->>'delivered' FROM iu_route_attempt WHERE idempotency_key = $1 AND attempt_no = 3`, []any{key}, &detail)
	if detail != key {
		t.Fatalf("sent attempt detail carries %q, want the seam's answer %q", detail, key)
	}
}
