package jobqueue

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

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
		// The rules over several columns live in a domain over the lease columns (018).
		{`UPDATE job_queue SET status = 'running' WHERE job_id = '` + id + `'`, "job_queue_lease_ck"},
		{`UPDATE job_queue SET status = 'running', lease_owner = 'w', lease_expires_at = now() WHERE job_id = '` + id + `'`, "job_queue_token_ck"},
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

// Rule (issue 23, 018, 023): job_queue's two rules over several columns hold for every write
// path, now that they live in a domain over the lease columns (iu_core.iu_job_lease_state)
// instead of two table CHECKs, cast by the predicate of the index job_queue_lease_rules,
// which every written row is tested against and none enters (023; 018's table CHECK did it
// before): a job is running exactly when a lease owner and a lease expiry are set
// (job_queue_lease_ck), and a running job has a lease token (job_queue_token_ck). A direct
// INSERT, UPDATE or COPY that breaks one is refused with 23514 naming it, job_queue_lease_ck
// first when both break (the order the table CHECKs had, by name), and nothing is written;
// every state the rules allow is still accepted (the rules did not grow stricter either).
func TestJobQueue_LeaseRulesHoldForEveryWrite(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	id := enqueue(t, db.Pool, "k")
	var running string
	db.QueryRow(t, `INSERT INTO job_queue (job_kind, event_domain, status, lease_owner, lease_expires_at, lease_token)
	                VALUES ('k', 'iu', 'running', 'w', now() + interval '1 minute', gen_random_uuid()) RETURNING job_id::text`, nil, &running)
	ins := `INSERT INTO job_queue (job_kind, event_domain, status, lease_owner, lease_expires_at, lease_token) VALUES ('k', 'iu', `
	for _, c := range []struct{ sql, constraint string }{
		{ins + `'running', NULL, NULL, gen_random_uuid())`, "job_queue_lease_ck"},
		{ins + `'running', 'w', NULL, gen_random_uuid())`, "job_queue_lease_ck"},
		{ins + `'running', NULL, now(), gen_random_uuid())`, "job_queue_lease_ck"},
		{ins + `'queued', 'w', now(), NULL)`, "job_queue_lease_ck"},
		{ins + `'succeeded', 'w', now(), gen_random_uuid())`, "job_queue_lease_ck"},
		{ins + `'running', 'w', now(), NULL)`, "job_queue_token_ck"},
		// Both broken: the lease rule answers, as the table CHECKs did (checked by name).
		{ins + `'running', NULL, NULL, NULL)`, "job_queue_lease_ck"},
		{`UPDATE job_queue SET lease_owner = 'w', lease_expires_at = now() WHERE job_id = '` + id + `'`, "job_queue_lease_ck"},
		{`UPDATE job_queue SET status = 'running', lease_owner = 'w', lease_expires_at = now() WHERE job_id = '` + id + `'`, "job_queue_token_ck"},
		// One lease column alone, on a running job (below): an update that changes a column the
		// rules read is never HOT, so it is tested too.
		{`UPDATE job_queue SET lease_token = NULL WHERE job_id = '` + running + `'`, "job_queue_token_ck"},
		{`UPDATE job_queue SET lease_owner = NULL WHERE job_id = '` + running + `'`, "job_queue_lease_ck"},
		{`UPDATE job_queue SET lease_expires_at = NULL WHERE job_id = '` + running + `'`, "job_queue_lease_ck"},
	} {
		e := pgtest.RequireSQLState(t, callErr(t, db.Pool, c.sql), "23514")
		if e.ConstraintName != c.constraint {
			t.Errorf("%s: constraint %q (%s), want %q", c.sql, e.ConstraintName, e.Message, c.constraint)
		}
	}
	// COPY takes the same path as INSERT; prove it does not skip the rules.
	_, err := db.Pool.CopyFrom(ctx(t), pgx.Identifier{"job_queue"},
		[]string{"job_kind", "event_domain", "status", "lease_owner", "lease_expires_at"},
		pgx.CopyFromRows([][]any{{"k", "iu", "running", "w", nil}}))
	if e := pgtest.RequireSQLState(t, err, "23514"); e.ConstraintName != "job_queue_lease_ck" {
		t.Errorf("COPY: constraint %q (%s), want job_queue_lease_ck", e.ConstraintName, e.Message)
	}
	if n := count(t, db, `SELECT count(*) FROM job_queue`); n != 2 {
		t.Fatalf("refused writes left %d rows, want the 2 written first", n)
	}
	// What the rules allow, they still allow: a running job with all three; a finished one
	// keeping its token; a job not running with one of owner or expiry, or a token alone.
	db.Exec(t, `UPDATE job_queue SET status = 'running', lease_owner = 'w', lease_expires_at = now() + interval '1 minute',
	                                 lease_token = gen_random_uuid() WHERE job_id = $1`, id)
	db.Exec(t, `UPDATE job_queue SET status = 'succeeded', lease_owner = NULL, lease_expires_at = NULL WHERE job_id = $1`, id)
	db.Exec(t, ins+`'queued', 'w', NULL, NULL), ('k', 'iu', 'dead', NULL, now(), NULL), ('k', 'iu', 'queued', NULL, NULL, gen_random_uuid())`)
	if n := count(t, db, `SELECT count(*) FROM job_queue`); n != 5 {
		t.Fatalf("the states the rules allow: %d rows, want 5", n)
	}
	// The index whose predicate enforces the rules is never entered: its metapage alone.
	if n := count(t, db, `SELECT (pg_relation_size('job_queue_lease_rules') / current_setting('block_size')::int)::int`); n != 1 {
		t.Fatalf("job_queue_lease_rules holds %d pages, want its metapage alone (no row enters it)", n)
	}
}

// Rule (issue 23, 018): fn_job_enqueue tests payload hygiene once, in job_queue's payload
// domain, and a dirty payload still gets fn_job_enqueue's own error (22023, where the key
// sits, the HINT) however fn_job_enqueue is reached: directly, with a dedupe key, from a
// function or a trigger of the caller's, under a translated lc_messages. The domain's
// refusing branch tells fn_job_enqueue from the call stack, from the frame right below it
// only: any other writer of a dirty job, even one running inside fn_job_enqueue's own INSERT
// (a trigger on job_queue), gets the domain's refusal (23514, job_queue_payload_hygiene).
// Nothing is written either way.
func TestJobEnqueue_DirtyPayloadOwnErrorOnlyForEnqueue(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	db.Exec(t, `
		CREATE FUNCTION public.t_wrap(p jsonb) RETURNS uuid LANGUAGE plpgsql AS $$
		BEGIN
		    RETURN fn_job_enqueue('k', 'iu', p);
		END $$;
		CREATE TABLE public.t_orders (p jsonb);
		CREATE FUNCTION public.t_orders_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
		    PERFORM fn_job_enqueue('k', 'iu', NEW.p);
		    RETURN NULL;
		END $$;
		CREATE TRIGGER t_orders_enqueue AFTER INSERT ON public.t_orders FOR EACH ROW EXECUTE FUNCTION public.t_orders_enqueue();
		-- A writer of its own inside fn_job_enqueue's INSERT: a job of kind spawn writes a
		-- second job with a dirty payload directly.
		CREATE FUNCTION public.t_spawn() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
		    IF NEW.job_kind = 'spawn' THEN
		        INSERT INTO public.job_queue (job_kind, event_domain, payload) VALUES ('child', 'iu', '{"raw": 1}');
		    END IF;
		    RETURN NULL;
		END $$;
		CREATE TRIGGER t_spawn AFTER INSERT ON public.job_queue FOR EACH ROW EXECUTE FUNCTION public.t_spawn();`)
	own := func(q querier, sql, at string) {
		t.Helper()
		e := pgtest.RequireSQLState(t, callErr(t, q, sql), "22023")
		if want := "fn_job_enqueue: p_payload carries denylisted keys at " + at; e.Message != want {
			t.Errorf("%s: message %q, want %q", sql, e.Message, want)
		}
		if !strings.Contains(e.Hint, "Payloads are signals, never data") {
			t.Errorf("%s: hint %q", sql, e.Hint)
		}
	}
	own(db.Pool, `SELECT fn_job_enqueue('k', 'iu', '{"a": [{"PassWord": 1}]}')`, "$.a[0].PassWord")
	own(db.Pool, `SELECT fn_job_enqueue('k', 'iu', '{"a": [{"PassWord": 1}]}', now(), 'dk')`, "$.a[0].PassWord")
	own(db.Pool, `SELECT t_wrap('{"Embedding": [1, 2]}')`, "$.Embedding")
	own(db.Pool, `INSERT INTO t_orders VALUES ('{"x": {"ssn": 1}}')`, "$.x.ssn")
	// fn_job_enqueue's own INSERT is the outer writer here; the dirty row is the trigger's.
	e := pgtest.RequireSQLState(t, callErr(t, db.Pool, `SELECT fn_job_enqueue('spawn', 'iu', '{}')`), "23514")
	if e.ConstraintName != "job_queue_payload_hygiene" {
		t.Errorf("a trigger's dirty job inside fn_job_enqueue: constraint %q (%s), want job_queue_payload_hygiene", e.ConstraintName, e.Message)
	}

	// PostgreSQL translates the call stack's words under a non-English lc_messages; the
	// sign must not depend on them. Needs a translated locale on the server's machine.
	t.Run("translated", func(t *testing.T) {
		conn := db.Conn(t)
		set := false
		for _, l := range []string{"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8", "es_ES.UTF-8", "es_ES.utf8"} {
			if _, err := conn.Exec(ctx(t), `SET lc_messages = '`+l+`'`); err == nil {
				set = true
				break
			}
		}
		var pgErr error
		if set {
			_, pgErr = conn.Exec(ctx(t), `SELECT 1 / 0`)
		}
		if !set || pgErr == nil || strings.Contains(pgErr.Error(), "division by zero") {
			t.Skip("no translated locale on the server's machine (de_DE, fr_FR or es_ES with PostgreSQL's messages)")
		}
		own(conn, `SELECT fn_job_enqueue('k', 'iu', '{"token": 1}')`, "$.token")
	})
	if n := count(t, db, `SELECT count(*) FROM job_queue`); n != 0 {
		t.Fatalf("refused enqueues wrote %d rows", n)
	}
}
