package tests

import (
	"strings"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// lockTimeoutExempt are the writing entry points that carry no lock_timeout of their own,
// each with the reason its waits are bounded anyway.
var lockTimeoutExempt = map[string]string{
	// A producer's hot path, in the producer's own transaction: its one possible wait is a
	// retention drop's ACCESS EXCLUSIVE, which retention bounds itself (it ends its own
	// session after 2 s idle); a timeout here would fail producers' transactions instead.
	"fn_iu_emit_event(text,text,text,text,text,text,text,jsonb)": "producers",
	// The same for a set of events: the same one possible wait, in the producer's transaction.
	"fn_iu_emit_events(text,text,text[],text[],text[],text[],text[],jsonb[])": "producers",
	"fn_iu_route_deliver(uuid,text,text)":                                     "fails closed at once",
	// Not listed, although a producer too: fn_job_enqueue. With a dedupe key its INSERT waits
	// for any other transaction that inserted a live job of the same key and has not ended
	// (ON CONFLICT is decided when that one commits or rolls back): a caller's open
	// transaction, the wait this rule bounds. Its pin costs an enqueue ~2,600 instructions.
}

// Rule (issue 21): every wait the package makes has a lock timeout. A caller's open
// transaction can hold a row, an advisory lock or a table the package needs; a function that
// waits for it without a timeout waits for as long as that caller pleases (before,
// fn_iu_route_worker_reset_cursor waited on a worker's advisory lock with none at all, and so
// did every beat, pause, job call and replay behind a held row). So every writing entry point
// the group roles may call, and every trigger function that locks, pins lock_timeout in its
// own SET clause (restored when it returns, never leaked into the caller's transaction),
// except the few listed with their reason.
func TestLockTimeout_EveryWaitIsBounded(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	var rows []struct {
		Sig    string
		Config []string
	}
	r, err := db.Pool.Query(pgtest.Ctx(t), `
		SELECT regexp_replace(p.oid::regprocedure::text, '^(public|iu_core)\.', ''), coalesce(p.proconfig, '{}')
		  FROM pg_proc p
		 WHERE p.pronamespace IN ('public'::regnamespace, 'iu_core'::regnamespace)
		   AND p.prosecdef AND p.provolatile = 'v'
		   AND (has_function_privilege('dot_executor', p.oid, 'EXECUTE')
		        OR has_function_privilege('workflow_admin', p.oid, 'EXECUTE')
		        OR p.prorettype = 'trigger'::regtype)
		 ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var row struct {
			Sig    string
			Config []string
		}
		if err := r.Scan(&row.Sig, &row.Config); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 25 {
		t.Fatalf("only %d writing entry points found: the premise is gone", len(rows))
	}
	for _, row := range rows {
		has := false
		for _, c := range row.Config {
			has = has || strings.HasPrefix(c, "lock_timeout=")
		}
		_, exempt := lockTimeoutExempt[row.Sig]
		switch {
		case !has && !exempt && !strings.HasPrefix(row.Sig, "fn_queue_wake_notify_"):
			t.Errorf("%s can wait for a lock with no timeout (SET lock_timeout = '5s' in its definition)", row.Sig)
		case has && exempt:
			t.Errorf("%s is listed as exempt but pins a lock timeout: take it off the list", row.Sig)
		}
	}
}
