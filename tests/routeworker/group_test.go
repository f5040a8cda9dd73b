package routeworker

import (
	"strings"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// requireGroupExactlyOnce is requireExactlyOnce with hash joins (a group's tests route tens
// of thousands of events; the per-event subquery would scan the attempts once per event).
func requireGroupExactlyOnce(t testing.TB, db *pgtest.DB, name string) int {
	t.Helper()
	var events, bad, orphans int
	var sample []string
	db.QueryRow(t, `
		SELECT count(*), count(*) FILTER (WHERE coalesce(a.n, 0) <> 1),
		       coalesce((array_agg(e.id::text || ' x' || coalesce(a.n, 0)) FILTER (WHERE coalesce(a.n, 0) <> 1))[1:5], '{}')
		  FROM event_outbox e
		  LEFT JOIN (SELECT event_ref, count(*) AS n FROM iu_route_attempt
		              WHERE worker_name = $1 AND attempt_no = 1 GROUP BY event_ref) a ON a.event_ref = e.id
		 WHERE e.event_domain = 'iu'`, []any{name}, &events, &bad, &sample)
	db.QueryRow(t, `
		SELECT count(*) FROM iu_route_attempt a
		 WHERE a.worker_name = $1 AND NOT EXISTS (SELECT 1 FROM event_outbox e WHERE e.id = a.event_ref)`,
		[]any{name}, &orphans)
	if bad > 0 || orphans > 0 {
		t.Fatalf("group %s: %d of %d iu events do not have exactly one attempt (e.g. %v); %d attempts for events that do not exist",
			name, bad, events, sample, orphans)
	}
	return events
}

// Rule: the members of a group split its domain by the stream's bucket: each routes exactly
// the events whose stream hashes into its share (fn_iu_route_group_bucket in [bucket_lo,
// bucket_hi)), and the group as a whole routes each event once, under the group's name.
// 500 events of 50 streams, two members run one after the other: each member's own count
// (its cursor's attempts_written) equals the events of the streams in its share, both
// shares are non-empty, every event has one attempt of worker g, and the running audit
// counts are g's.
func TestGroup_MembersSplitTheDomainByStream(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	db.Exec(t, `SELECT fn_iu_route_worker_register_member('g', 'g-1')`)
	db.Exec(t, `SELECT fn_iu_route_worker_register_member('g', 'g-2')`)
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream)
	            SELECT 'iu', 'dry', 's' || (g % 50) FROM generate_series(1, 500) g`)
	for _, m := range []string{"g-1", "g-2"} {
		runUntilCaughtUp(t, db.Pool, m, 100)
	}
	if n := requireGroupExactlyOnce(t, db, "g"); n != 500 {
		t.Fatalf("want 500 events routed by the group, got %d", n)
	}
	for _, m := range []string{"g-1", "g-2"} {
		var wrote, want int
		db.QueryRow(t, `
			SELECT c.attempts_written,
			       (SELECT count(*) FROM event_outbox e
			         WHERE e.event_domain = 'iu'
			           AND iu_core.fn_iu_route_group_bucket(e.event_stream) >= gm.bucket_lo
			           AND iu_core.fn_iu_route_group_bucket(e.event_stream) <  gm.bucket_hi)
			  FROM iu_route_worker_cursor c JOIN iu_route_group_member gm ON gm.member_name = c.worker_name
			 WHERE c.worker_name = $1`, []any{m}, &wrote, &want)
		if wrote != want || want == 0 {
			t.Errorf("member %s wrote %d attempts, its buckets hold %d events", m, wrote, want)
		}
	}
	// The running audit counts (v_iu_route_attempt_summary reads them) are the group's, as
	// its attempts are: a member's run adds to g's, never to a tally of its own.
	var tallied, members int
	db.QueryRow(t, `SELECT coalesce(sum(attempts) FILTER (WHERE worker_name = 'g'), 0),
	                       count(*) FILTER (WHERE worker_name IN ('g-1', 'g-2'))
	                  FROM iu_route_attempt_tally`, nil, &tallied, &members)
	if tallied != 500 || members != 0 {
		t.Errorf("running counts: want 500 under g and none under a member, got %d under g, %d member rows", tallied, members)
	}
	var health map[string]any
	db.QueryRow(t, `SELECT fn_iu_route_group_health('g')`, nil, &health)
	if health["state"] != "settled" || health["backlog"] != float64(0) {
		t.Errorf("health: want settled with no backlog, got %v", health)
	}
}

// Rule: v_queue_health has one route_group row per group: status_hint rebalancing while a
// hand-over is pending, its detail naming the members not at the boundary yet (waiting_on),
// and caught_up once the hand-over settled and every member routed everything. g-1 and g-2
// route 200 events, 100 more arrive, g-3 joins (a hand-over: g-1 and g-2 are behind the
// boundary, g-3 starts at it); after the members run, the row is caught_up with 3 members.
func TestGroup_QueueHealthRow(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	db.Exec(t, `SELECT fn_iu_route_worker_register_member('g', 'g-1')`)
	db.Exec(t, `SELECT fn_iu_route_worker_register_member('g', 'g-2')`)
	emit := func(n int) {
		db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream)
		            SELECT 'iu', 'dry', 's' || (g % 20) FROM generate_series(1, $1::int) g`, n)
	}
	emit(200)
	for _, m := range []string{"g-1", "g-2"} {
		runUntilCaughtUp(t, db.Pool, m, 100)
	}
	emit(100)
	db.Exec(t, `SELECT fn_iu_route_worker_register_member('g', 'g-3')`)
	row := func() (hint string, waiting []string, members int) {
		db.QueryRow(t, `SELECT status_hint,
		                       ARRAY(SELECT jsonb_array_elements_text(detail->'waiting_on')),
		                       (detail->>'members')::int
		                  FROM v_queue_health WHERE source = 'route_group' AND subject = 'g'`, nil, &hint, &waiting, &members)
		return
	}
	if hint, waiting, _ := row(); hint != "rebalancing" || strings.Join(waiting, ",") != "g-1,g-2" {
		t.Fatalf("pending hand-over: want rebalancing waiting on g-1,g-2; got %s waiting on %v", hint, waiting)
	}
	for round := 0; round < 5; round++ {
		for _, m := range []string{"g-1", "g-2", "g-3"} {
			runUntilCaughtUp(t, db.Pool, m, 100)
		}
	}
	if hint, waiting, members := row(); hint != "caught_up" || len(waiting) != 0 || members != 3 {
		t.Fatalf("after the members ran: want caught_up, nobody waited on, 3 members; got %s, waiting on %v, %d members", hint, waiting, members)
	}
	if n := requireGroupExactlyOnce(t, db, "g"); n != 300 {
		t.Fatalf("want 300 events routed by the group, got %d", n)
	}
}
