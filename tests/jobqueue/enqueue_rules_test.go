package jobqueue

import (
	"strings"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule (issue 23): fn_job_enqueue accepts in one condition and, when it fails, walks its
// rules one by one: every refusal is still the broken rule's own function-prefixed message
// with SQLSTATE 22023, a call breaking several rules gets the first one's (kind, domain,
// payload, process_after, max_attempts, dedupe key, horizon), and nothing is written. The
// cases the other tests cover (over-long kind and key, blank key, infinite or far
// process_after, the horizon, a denylisted key alone) are not repeated here.
func TestJobEnqueue_EachRefusalItsOwnErrorInOrder(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	for _, c := range []struct{ sql, msg string }{
		{`SELECT fn_job_enqueue(' ', 'iu')`, "fn_job_enqueue: p_job_kind required"},
		{`SELECT fn_job_enqueue(NULL, 'iu')`, "fn_job_enqueue: p_job_kind required"},
		{`SELECT fn_job_enqueue('k', E'\t')`, "fn_job_enqueue: p_event_domain required"},
		{`SELECT fn_job_enqueue('k', repeat('d', 201))`, "fn_job_enqueue: p_event_domain is 201 bytes long"},
		{`SELECT fn_job_enqueue('k', 'iu', '[1]')`, "fn_job_enqueue: p_payload must be a JSON object"},
		{`SELECT fn_job_enqueue('k', 'iu', '"x"')`, "fn_job_enqueue: p_payload must be a JSON object"},
		{`SELECT fn_job_enqueue('k', 'iu', '{"Secret": 1}', now(), 'dk')`, "fn_job_enqueue: p_payload carries denylisted keys at $.Secret"},
		{`SELECT fn_job_enqueue('k', 'iu', '{}', now(), NULL, 0)`, "fn_job_enqueue: p_max_attempts must be between 1 and 100, got 0"},
		{`SELECT fn_job_enqueue('k', 'iu', '{}', now(), NULL, 101)`, "fn_job_enqueue: p_max_attempts must be between 1 and 100, got 101"},
		{`SELECT fn_job_enqueue('k', 'iu', '{}', now(), 'dk', NULL)`, "fn_job_enqueue: p_max_attempts must be between 1 and 100, got NULL"},
		// Several rules broken at once: the first in the documented order answers.
		{`SELECT fn_job_enqueue('', '', '[]', 'infinity', ' ', 0)`, "fn_job_enqueue: p_job_kind required"},
		{`SELECT fn_job_enqueue('k', '', '[]', 'infinity', ' ', 0)`, "fn_job_enqueue: p_event_domain required"},
		{`SELECT fn_job_enqueue('k', 'iu', '{"a": {"token": 1}}', 'infinity', ' ', 0)`, "fn_job_enqueue: p_payload carries denylisted keys at $.a.token"},
		{`SELECT fn_job_enqueue('k', 'iu', '{}', now() + interval '2 years', ' ', 0)`, "fn_job_enqueue: p_process_after"},
		{`SELECT fn_job_enqueue('k', 'iu', '{}', now() + interval '2 days', ' ', 0)`, "fn_job_enqueue: p_max_attempts must be between 1 and 100"},
		{`SELECT fn_job_enqueue('k', 'iu', '{}', now() + interval '2 days', ' ')`, "fn_job_enqueue: p_dedupe_key required"},
		{`SELECT fn_job_enqueue('k', 'iu', '{}', now() + interval '2 days', 'dk')`, "fn_job_enqueue: a job with a dedupe key may be due at most 86400 seconds ahead"},
	} {
		e := pgtest.RequireSQLState(t, callErr(t, db.Pool, c.sql), "22023")
		if !strings.HasPrefix(e.Message, c.msg) {
			t.Errorf("%s: message %q, want prefix %q", c.sql, e.Message, c.msg)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM job_queue`); n != 0 {
		t.Fatalf("refused enqueues wrote %d rows", n)
	}
	// The accepting path fills what the columns' defaults would: NULL payload {}, NULL
	// process_after now, queued, attempt 0, the timestamps of the transaction.
	var id string
	db.QueryRow(t, `SELECT fn_job_enqueue('k', 'iu', NULL, NULL, NULL, 7)::text`, nil, &id)
	var ok bool
	db.QueryRow(t, `SELECT q.payload = '{}' AND q.process_after = q.enqueued_at AND q.updated_at = q.enqueued_at
	           AND q.enqueued_at BETWEEN now() - interval '1 minute' AND now()
	           AND q.status = 'queued' AND q.attempt = 0 AND q.max_attempts = 7 AND q.dedupe_key IS NULL
	           AND q.lease_owner IS NULL AND q.finished_at IS NULL
	      FROM job_queue q WHERE q.job_id = $1`, []any{id}, &ok)
	if !ok {
		t.Fatal("an accepted enqueue must store the row the columns' defaults would")
	}
}

// Rule (issue 23): job_queue's single-column rules live in its columns' domains (016) and
// still hold for every write that bypasses fn_job_enqueue: a direct INSERT or UPDATE that
// breaks one is refused with 23514 naming the same constraint as the table CHECK it
// replaced, and nothing is written.
func TestJobQueue_DirectWritesRefusedBySameConstraint(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	id := enqueue(t, db.Pool, "k")
	for _, c := range []struct{ sql, constraint string }{
		{`INSERT INTO job_queue (job_kind, event_domain) VALUES ('', 'iu')`, "job_queue_job_kind_check"},
		{`INSERT INTO job_queue (job_kind, event_domain) VALUES ('k', '')`, "job_queue_event_domain_check"},
		{`INSERT INTO job_queue (job_kind, event_domain, status) VALUES ('k', 'iu', 'lost')`, "job_queue_status_check"},
		{`INSERT INTO job_queue (job_kind, event_domain, payload) VALUES ('k', 'iu', '[]')`, "job_queue_payload_object"},
		{`INSERT INTO job_queue (job_kind, event_domain, payload) VALUES ('k', 'iu', '{"x": [{"PassWord": 1}]}')`, "job_queue_payload_hygiene"},
		{`INSERT INTO job_queue (job_kind, event_domain, attempt) VALUES ('k', 'iu', -1)`, "job_queue_attempt_check"},
		{`INSERT INTO job_queue (job_kind, event_domain, max_attempts) VALUES ('k', 'iu', 0)`, "job_queue_max_attempts_check"},
		{`INSERT INTO job_queue (job_kind, event_domain, payload) SELECT 'k', 'iu', jsonb_build_object('token', g) FROM generate_series(1, 3) g`, "job_queue_payload_hygiene"},
		{`UPDATE job_queue SET status = 'lost' WHERE job_id = '` + id + `'`, "job_queue_status_check"},
		{`UPDATE job_queue SET payload = payload || '{"ssn": 1}' WHERE job_id = '` + id + `'`, "job_queue_payload_hygiene"},
		{`UPDATE job_queue SET job_kind = '' WHERE job_id = '` + id + `'`, "job_queue_job_kind_check"},
		{`UPDATE job_queue SET max_attempts = max_attempts - 5 WHERE job_id = '` + id + `'`, "job_queue_max_attempts_check"},
		{`UPDATE job_queue SET attempt = attempt - 1 WHERE job_id = '` + id + `'`, "job_queue_attempt_check"},
		// The rules over two columns stay table CHECKs.
		{`UPDATE job_queue SET status = 'running' WHERE job_id = '` + id + `'`, "job_queue_lease_ck"},
	} {
		e := pgtest.RequireSQLState(t, callErr(t, db.Pool, c.sql), "23514")
		if e.ConstraintName != c.constraint {
			t.Errorf("%s: constraint %q (%s), want %q", c.sql, e.ConstraintName, e.Message, c.constraint)
		}
	}
	var ok bool
	db.QueryRow(t, `SELECT count(*) = 1 AND bool_and(status = 'queued' AND job_kind = 'k' AND payload = '{}' AND attempt = 0 AND max_attempts = 5)
	                  FROM job_queue`, nil, &ok)
	if !ok {
		t.Fatal("a refused write changed job_queue")
	}
}
