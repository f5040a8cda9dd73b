package routeworker

import (
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
// shares are non-empty, and every event has one attempt of worker g.
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
	var health map[string]any
	db.QueryRow(t, `SELECT fn_iu_route_group_health('g')`, nil, &health)
	if health["state"] != "settled" || health["backlog"] != float64(0) {
		t.Errorf("health: want settled with no backlog, got %v", health)
	}
}
