package queuehealth

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iu-core/event-worker/internal/pgtest"
)

func listen(t testing.TB, db *pgtest.DB, channel string) *pgx.Conn {
	t.Helper()
	c := db.Conn(t)
	if _, err := c.Exec(ctx(t), "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return c
}

// next waits (bounded) for the next notification on c.
func next(t testing.TB, c *pgx.Conn) (*pgconn.Notification, obj) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx(t), 5*time.Second)
	defer cancel()
	n, err := c.WaitForNotification(wctx)
	if err != nil {
		t.Fatalf("waiting for a notification: %v", err)
	}
	var payload obj
	if err := json.Unmarshal([]byte(n.Payload), &payload); err != nil {
		t.Fatalf("payload %q: %v", n.Payload, err)
	}
	return n, payload
}

func keys(o obj) map[string]bool {
	out := map[string]bool{}
	for k := range o {
		out[k] = true
	}
	return out
}

func sameKeys(t testing.TB, o obj, want ...string) {
	t.Helper()
	k := keys(o)
	if len(k) != len(want) {
		t.Fatalf("payload keys %v, want exactly %v", o, want)
	}
	for _, w := range want {
		if !k[w] {
			t.Fatalf("payload %v lacks %q (want exactly %v)", o, w, want)
		}
	}
}

// Rule: the bridge is off by default (fail-closed: a missing key is off too); switched on,
// a single-row event insert sends the signal-only payload on queue_wake_<domain>.
func TestNotify_EventBridgeGatedAndSignalOnly(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	l := listen(t, db, "queue_wake_iu")
	var on bool
	db.QueryRow(t, `SELECT fn_queue_notify_enabled()`, nil, &on)
	if on {
		t.Fatal("the bridge must be off by default")
	}
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream, safe_payload) VALUES ('iu', 'off', 's', '{"n": 1}')`)
	db.Exec(t, `DELETE FROM dot_config WHERE key = 'queue.notify.bridge_enabled'`)
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 'missing', 's')`)
	setConfig(t, db, "queue.notify.bridge_enabled", "TRUE")
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 'typo', 's')`)

	setConfig(t, db, "queue.notify.bridge_enabled", "true")
	var id string
	db.QueryRow(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream, delivery_lane, safe_payload)
	                VALUES ('iu', 'on', 's', 'immediate', '{"ref": "r1"}') RETURNING id::text`, nil, &id)

	// The first notification is the one sent with the bridge on: the gated inserts sent nothing.
	n, p := next(t, l)
	if n.Channel != "queue_wake_iu" {
		t.Fatalf("channel %q", n.Channel)
	}
	sameKeys(t, p, "layer", "event_id", "event_domain", "event_type", "lane", "occurred_at")
	if p["layer"] != "event" || p["event_id"] != id || p["event_domain"] != "iu" || p["event_type"] != "on" || p["lane"] != "immediate" {
		t.Fatalf("payload %v", p)
	}
}

// Rule: a job insert signals {"layer": "job", job_id, job_kind, process_after} on the
// job's domain channel.
func TestNotify_JobBridge(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	setConfig(t, db, "queue.notify.bridge_enabled", "true")
	l := listen(t, db, "queue_wake_kb")
	var id string
	db.QueryRow(t, `SELECT fn_job_enqueue('reindex', 'kb', '{"doc_ref": 9}')::text`, nil, &id)
	_, p := next(t, l)
	sameKeys(t, p, "layer", "job_id", "job_kind", "process_after")
	if p["layer"] != "job" || p["job_id"] != id || p["job_kind"] != "reindex" {
		t.Fatalf("payload %v", p)
	}
}

// Rule: a multi-row insert sends one notification per domain per statement, with a count
// (and the first and last ids), not one per row.
func TestNotify_MultiRowInsertCoalesces(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	setConfig(t, db, "queue.notify.bridge_enabled", "true")
	iu := listen(t, db, "queue_wake_iu")
	kb := listen(t, db, "queue_wake_kb")
	// ids in descending order, so "first" and "last" cannot come from sorting them.
	db.Exec(t, `INSERT INTO event_outbox (id, event_domain, event_type, event_stream)
	            SELECT ('00000000-0000-0000-0000-' || lpad((1000 - g)::text, 12, '0'))::uuid,
	                   CASE WHEN g <= 500 THEN 'iu' ELSE 'kb' END, 'bulk', 's'
	              FROM generate_series(1, 503) g`)
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 'marker', 's'), ('kb', 'marker', 's')`)
	db.Exec(t, `INSERT INTO job_queue (job_kind, event_domain) SELECT 'k', 'iu' FROM generate_series(1, 50)`)

	for _, c := range []struct {
		conn        *pgx.Conn
		count       float64
		first, last string
	}{
		{iu, 500, "00000000-0000-0000-0000-000000000999", "00000000-0000-0000-0000-000000000500"},
		{kb, 3, "00000000-0000-0000-0000-000000000499", "00000000-0000-0000-0000-000000000497"},
	} {
		_, p := next(t, c.conn)
		sameKeys(t, p, "layer", "event_domain", "count", "first_event_id", "last_event_id", "lanes")
		if p["layer"] != "event" || num(t, p, "count") != c.count || p["first_event_id"] != c.first || p["last_event_id"] != c.last {
			t.Fatalf("coalesced payload %v, want count %v, first %s, last %s", p, c.count, c.first, c.last)
		}
		// The very next notification is the marker statement's (one row of this domain:
		// the single-row payload), so the bulk insert sent exactly one for the domain.
		_, p = next(t, c.conn)
		if p["event_type"] != "marker" {
			t.Fatalf("next payload %v, want the marker", p)
		}
	}
	_, p := next(t, iu)
	if p["layer"] != "job" || num(t, p, "count") != 50 || p["first_job_id"] == nil || p["last_job_id"] == nil {
		t.Fatalf("job bulk payload %v", p)
	}
}

// Rule: the bridge can never make an insert fail: a domain too long for a channel name is
// simply not signalled (the poll still finds its rows).
func TestNotify_LongDomainNeverFailsInsert(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	setConfig(t, db, "queue.notify.bridge_enabled", "true")
	long := "this_domain_name_is_far_too_long_for_a_postgres_channel_name_x"
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ($1, 't', 's')`, long)
	db.Exec(t, `INSERT INTO job_queue (job_kind, event_domain) VALUES ('k', $1), ('k', $1)`, long)
	if n := count(t, db, `SELECT count(*) FROM job_queue WHERE event_domain = $1`, long); n != 2 {
		t.Fatalf("rows = %d", n)
	}
}

// Rule ("the bridge can never make an insert fail"): pg_notify refuses payloads of
// 8000 bytes or more. A single-row insert with a 9000-character job_kind (and a multi-row
// job insert of such kinds) still succeeds, and the listener still gets a wake-up: a
// reduced payload with the ids, the domain and "truncated": true. An event's names are at
// most 200 bytes (024), so its signal always fits: the longest type the outbox takes is
// signalled whole.
func TestNotify_OversizedPayloadNeverFailsInsert(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	setConfig(t, db, "queue.notify.bridge_enabled", "true")
	l := listen(t, db, "queue_wake_iu")
	longType := strings.Repeat("t", 200)
	var id string
	if err := db.Pool.QueryRow(ctx(t), `INSERT INTO event_outbox (event_domain, event_type, event_stream, delivery_lane)
	                                    VALUES ('iu', $1, 's', 'immediate') RETURNING id::text`, longType).Scan(&id); err != nil {
		t.Fatalf("single-row insert with a 200-byte event_type failed: %v", err)
	}
	n, p := next(t, l)
	if len(n.Payload) >= 8000 || p["truncated"] != nil || p["layer"] != "event" || p["event_id"] != id ||
		p["event_domain"] != "iu" || p["lane"] != "immediate" || p["event_type"] != longType {
		t.Fatalf("event payload (%d bytes): %v", len(n.Payload), p)
	}

	longKind := strings.Repeat("k", 9000)
	var jobID string
	// A direct INSERT: fn_job_enqueue refuses kinds over 200 bytes, but the bridge must
	// survive whatever a producer with table rights writes.
	if err := db.Pool.QueryRow(ctx(t), `INSERT INTO job_queue (job_kind, event_domain) VALUES ($1, 'iu') RETURNING job_id::text`, longKind).Scan(&jobID); err != nil {
		t.Fatalf("job with a 9000-character job_kind: %v", err)
	}
	n, p = next(t, l)
	if len(n.Payload) >= 8000 || p["truncated"] != true || p["layer"] != "job" || p["job_id"] != jobID {
		t.Fatalf("reduced job payload (%d bytes): %v", len(n.Payload), p)
	}

	if _, err := db.Pool.Exec(ctx(t), `INSERT INTO job_queue (job_kind, event_domain) VALUES ($1 || 'a', 'iu'), ($1 || 'b', 'iu')`, longKind); err != nil {
		t.Fatalf("multi-row job insert with long kinds: %v", err)
	}
	n, p = next(t, l)
	if len(n.Payload) >= 8000 || p["truncated"] != true || num(t, p, "count") != 2 {
		t.Fatalf("reduced coalesced job payload (%d bytes): %v", len(n.Payload), p)
	}
	// A normal payload is untouched (no "truncated" key).
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 'short', 's')`)
	_, p = next(t, l)
	sameKeys(t, p, "layer", "event_id", "event_domain", "event_type", "lane", "occurred_at")
}

// Rule: a closed gate costs producers nothing, because the bridge's triggers exist only
// while the gate is open. Every way of writing the gate (UPDATE, upsert, DELETE of the key,
// TRUNCATE of dot_config, a value that is not exactly 'true') leaves the triggers present
// exactly when fn_queue_notify_enabled() reads true, in the same transaction (a rolled-back
// opening leaves nothing behind), and the re-created triggers still signal.
func TestNotify_ClosedGateInstallsNoTrigger(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	present := func(what string, want bool) {
		t.Helper()
		var n int
		db.QueryRow(t, `SELECT count(*)::int FROM pg_trigger
		                 WHERE (tgrelid, tgname) IN (('event_outbox'::regclass, 'trg_event_outbox_wake_notify'),
		                                             ('job_queue'::regclass, 'trg_job_queue_wake_notify'))`, nil, &n)
		if want && n != 2 || !want && n != 0 {
			t.Fatalf("%s: %d of the 2 bridge triggers present, want them %s", what, n, map[bool]string{true: "present", false: "absent"}[want])
		}
	}
	present("as installed (gate seeded 'false')", false)
	setConfig(t, db, "queue.notify.bridge_enabled", "true")
	present("gate opened by upsert", true)
	db.Exec(t, `UPDATE dot_config SET value = 'TRUE' WHERE key = 'queue.notify.bridge_enabled'`)
	present("gate set to 'TRUE' (not exactly 'true': closed)", false)
	db.Exec(t, `UPDATE dot_config SET value = 'true' WHERE key = 'queue.notify.bridge_enabled'`)
	present("gate opened by UPDATE", true)
	db.Exec(t, `DELETE FROM dot_config WHERE key = 'queue.notify.bridge_enabled'`)
	present("gate key deleted (missing: closed)", false)
	setConfig(t, db, "queue.notify.bridge_enabled", "true")
	present("gate key re-inserted as 'true'", true)
	db.Exec(t, `UPDATE dot_config SET value = 'true' WHERE key = 'iu_core.routes_enabled'`)
	present("another key written while open", true)

	// The re-created trigger signals.
	l := listen(t, db, "queue_wake_iu")
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 'after_reopen', 's')`)
	if _, p := next(t, l); p["event_type"] != "after_reopen" {
		t.Fatalf("payload %v", p)
	}

	// Closing in a transaction that rolls back leaves the gate and the triggers as they were.
	tx, err := db.Pool.Begin(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx(t), `UPDATE dot_config SET value = 'false' WHERE key = 'queue.notify.bridge_enabled'`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx(t)); err != nil {
		t.Fatal(err)
	}
	present("close rolled back", true)
	db.Exec(t, `TRUNCATE dot_config`)
	present("dot_config truncated (every gate missing: closed)", false)
}
