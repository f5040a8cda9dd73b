package routeworker

// A member's claim: the other members' events are skipped inside the claim's index scans
// (fn_iu_route_worker_claim with the member's buckets, fn_iu_route_group_claims), except
// their waypoints, which bound how far one page reads.

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// groupOfTwo registers members g-1 and g-2 of group g before anything is routed (the shares
// apply at once: g-1 owns buckets [0, 2048), g-2 [2048, 4096)) and returns n streams whose
// events only g-2 owns.
func groupOfTwo(t *testing.T, db *pgtest.DB, n int) []string {
	t.Helper()
	db.Exec(t, `SELECT fn_iu_route_worker_register_member('g', 'g-1')`)
	db.Exec(t, `SELECT fn_iu_route_worker_register_member('g', 'g-2')`)
	var lo, hi int
	db.QueryRow(t, `SELECT bucket_lo, bucket_hi FROM iu_route_group_member WHERE member_name = 'g-2'`, nil, &lo, &hi)
	if lo != 2048 || hi != 4096 {
		t.Fatalf("g-2 owns [%d, %d), want [2048, 4096)", lo, hi)
	}
	var streams []string
	db.QueryRow(t, `SELECT array_agg(s) FROM (
	                  SELECT 's' || g AS s FROM generate_series(1, 10000) g
	                   WHERE iu_core.fn_iu_route_group_bucket('s' || g) >= 2048 LIMIT $1) x`, []any{n}, &streams)
	if len(streams) != n {
		t.Fatalf("found %d streams of g-2's buckets, want %d", len(streams), n)
	}
	return streams
}

// cursorPos is a member's stored position as text (NULL as "").
func cursorPos(t *testing.T, db *pgtest.DB, member string) (done, window, keyID string) {
	t.Helper()
	db.QueryRow(t, `SELECT coalesce(done_snapshot::text, ''), coalesce(window_snapshot::text, ''), coalesce(window_event_id::text, '')
	                  FROM iu_route_worker_cursor WHERE worker_name = $1`, []any{member}, &done, &window, &keyID)
	return
}

// explainNode is the part of EXPLAIN (ANALYZE, FORMAT JSON) these tests read.
type explainNode struct {
	NodeType     string        `json:"Node Type"`
	RelationName string        `json:"Relation Name"`
	IndexName    string        `json:"Index Name"`
	Filter       string        `json:"Filter"`
	JoinFilter   string        `json:"Join Filter"`
	RemovedByF   float64       `json:"Rows Removed by Filter"`
	ActualRows   float64       `json:"Actual Rows"`
	ActualLoops  float64       `json:"Actual Loops"`
	Plans        []explainNode `json:"Plans"`
}

func walkExplain(n explainNode, f func(explainNode)) {
	f(n)
	for _, c := range n.Plans {
		walkExplain(c, f)
	}
}

// explainGeneric EXPLAIN (ANALYZE)s a prepared statement under force_generic_plan (how
// fn_iu_route_worker_run executes every statement of a run) and returns the plan's root.
func explainGeneric(t *testing.T, db *pgtest.DB, prepare, execute string) explainNode {
	t.Helper()
	conn := db.Conn(t)
	ctx := pgtest.Ctx(t)
	for _, stmt := range []string{`SET plan_cache_mode = force_generic_plan`, prepare} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var raw []byte
	if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+execute).Scan(&raw); err != nil {
		t.Fatalf("EXPLAIN %s: %v", execute, err)
	}
	var out []struct {
		Plan explainNode `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out) != 1 {
		t.Fatalf("EXPLAIN output: %v: %s", err, raw)
	}
	return out[0].Plan
}

// outboxScans are the plan's scans of event_outbox (its partitions).
func outboxScans(root explainNode) []explainNode {
	var scans []explainNode
	walkExplain(root, func(n explainNode) {
		if strings.HasPrefix(n.RelationName, "event_outbox") {
			scans = append(scans, n)
		}
	})
	return scans
}

// Rule: a member's page skips the other members' events INSIDE the claim's index scans,
// before their LIMITs: the member's page statement (fn_iu_route_group_page, planned
// generic, as a run executes it), over a window of 2,000 events of 40 streams (about half
// of them g-1's), has the bucket test (the stream's hash) in the filter of its index range
// scan on event_outbox; that scan hands up exactly the page's rows (g-1's next 300 events
// and the others' waypoints among them), the rest removed by the filter; and the page is
// exactly those rows in (txid, id) order. A worker's claim (no buckets) is planned with no
// trace of the test: it folds away, so a worker pays nothing for it.
func TestGroup_MemberPageSkipsOthersInsideTheScan(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	groupOfTwo(t, db, 1)
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream)
	            SELECT 'iu', 'dry', 'st' || (g % 40) FROM generate_series(1, 2000) g`)
	db.Exec(t, `ANALYZE event_outbox`)
	var snap string
	db.QueryRow(t, `SELECT pg_current_snapshot()::text`, nil, &snap)

	// What the page must be: g-1's rows and the others' waypoints, the first 300 of them, and
	// how many of the others' events lie before the last of them (the scan must drop those).
	const limit = 300
	var want []string
	var skipped, own int
	db.QueryRow(t, `
		WITH w AS (SELECT o.id, o.txid, iu_core.fn_iu_route_group_claims(o.id, o.event_stream, 0, 2048) AS c
		             FROM event_outbox o WHERE o.event_domain = 'iu'),
		     page AS (SELECT id, txid, c FROM w WHERE c IS NOT NULL ORDER BY txid, id LIMIT $1),
		     last AS (SELECT txid, id FROM page ORDER BY txid DESC, id DESC LIMIT 1)
		SELECT (SELECT array_agg(id::text ORDER BY txid, id) FROM page),
		       (SELECT count(*) FROM w, last WHERE w.c IS NULL AND (w.txid, w.id) < (last.txid, last.id)),
		       (SELECT count(*) FROM page WHERE c)`, []any{limit}, &want, &skipped, &own)
	if len(want) != limit || skipped < 100 || own < limit*9/10 {
		t.Fatalf("premise: want a full page of mostly g-1's events with others' events among them; got %d rows, %d own, %d skipped", len(want), own, skipped)
	}

	root := explainGeneric(t, db,
		`PREPARE member_page(text, pg_snapshot, integer, integer, integer) AS
		   SELECT * FROM iu_core.fn_iu_route_group_page($1, ROW(NULL, $2, NULL, NULL)::iu_core.iu_route_window, $3, $4, $5)`,
		fmt.Sprintf(`EXECUTE member_page('iu', '%s', %d, 0, 2048)`, snap, limit))
	var handedUp, removed float64
	var filtered bool
	for _, n := range outboxScans(root) {
		if n.NodeType != "Index Scan" || !strings.HasSuffix(n.IndexName, "domain_txid_idx") {
			if n.ActualRows > 0 {
				t.Fatalf("the member's page reads event_outbox with a %s on %s: %+v", n.NodeType, n.IndexName, n)
			}
			continue
		}
		handedUp += n.ActualRows * n.ActualLoops
		removed += n.RemovedByF * n.ActualLoops
		if n.ActualRows > 0 {
			filtered = strings.Contains(n.Filter, "hashtextextended")
		}
	}
	if !filtered || int(handedUp) != limit || int(removed) != skipped {
		t.Fatalf("the member's index scan must filter by bucket (hashtextextended in its Filter: %v), hand up exactly the page's %d rows (%v) and remove the %d others' events before its last row (%v)",
			filtered, limit, handedUp, skipped, removed)
	}
	if int(root.ActualRows) != limit {
		t.Fatalf("the page has %v rows, want %d", root.ActualRows, limit)
	}
	var got []string
	db.QueryRow(t, fmt.Sprintf(`SELECT array_agg(p.id::text ORDER BY p.txid, p.id)
	                              FROM iu_core.fn_iu_route_group_page('iu', ROW(NULL, '%s', NULL, NULL)::iu_core.iu_route_window, %d, 0, 2048) p`,
		snap, limit), nil, &got)
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("the member's page is not its next %d rows (its own events and waypoints) in (txid, id) order", limit)
	}

	// The worker's claim: no bucket test anywhere in its plan.
	wroot := explainGeneric(t, db,
		`PREPARE worker_page(text, pg_snapshot, integer) AS
		   SELECT * FROM iu_core.fn_iu_route_worker_page($1, ROW(NULL, $2, NULL, NULL)::iu_core.iu_route_window, $3)`,
		fmt.Sprintf(`EXECUTE worker_page('iu', '%s', %d)`, snap, limit))
	walkExplain(wroot, func(n explainNode) {
		if strings.Contains(n.Filter+n.JoinFilter, "hashtextextended") || strings.Contains(n.Filter+n.JoinFilter, "uuid_hash") {
			t.Fatalf("a worker's page evaluates the bucket test: %s %s", n.NodeType, n.Filter+n.JoinFilter)
		}
	})
	if int(wroot.ActualRows) != limit {
		t.Fatalf("the worker's page has %v rows, want %d", wroot.ActualRows, limit)
	}
}

// Rule: a member passes the other members' events without reading them through its page:
// when its window holds only their events (3,000 of g-2's streams), one run of batch 100
// routes none of them, reads past only their waypoints (about 1 in 64: fewer than its
// batch), closes the window (caught_up) and writes its position there; its next run is idle.
// (Reading every event through the page, as a member did before, takes 15 runs of 200 rows.)
// g-2 then routes all 3,000, once.
func TestGroup_MemberPassesAWindowOfOthersInOneRun(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	streams := groupOfTwo(t, db, 20)
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream)
	            SELECT 'iu', 'dry', ($1::text[])[1 + g % 20] FROM generate_series(1, 3000) g`, streams)
	done0, _, _ := cursorPos(t, db, "g-1")
	m := run(t, db.Pool, "g-1", 100)
	requireCounts(t, m, map[string]int{"claimed": 0, "attempts_written": 0})
	if m["caught_up"] != true || m["idle"] != false || m["window_open"] != false {
		t.Fatalf("one run of batch 100 must pass the 3,000 others' events and close its window (caught_up, not idle): %v", m)
	}
	done1, window1, _ := cursorPos(t, db, "g-1")
	if done1 == done0 || window1 != "" {
		t.Fatalf("the position must be written at the window's end: done %q -> %q, window %q", done0, done1, window1)
	}
	if m2 := run(t, db.Pool, "g-1", 100); m2["idle"] != true {
		t.Fatalf("the next run must be idle (nothing new): %v", m2)
	}
	sum := runUntilCaughtUp(t, db.Pool, "g-2", 1000)
	if sum["claimed"] != 3000 {
		t.Fatalf("g-2 routed %d of its 3,000 events", sum["claimed"])
	}
	if n := requireGroupExactlyOnce(t, db, "g"); n != 3000 {
		t.Fatalf("want 3,000 events routed by the group, got %d", n)
	}
}

// Rule: waypoints bound a member's page: over a window of 20,000 events that holds none of
// its own, a run of batch 10 reads past 10 waypoints, about 640 rows into the window (64
// per waypoint on average; asserted between 100 and 5,000), not the whole window: it leaves
// the window open, its keyset on a waypoint (another member's event that
// fn_iu_route_group_claims marks false). Its runs then move on through the window to its
// end, routing nothing.
func TestGroup_WaypointsBoundAMemberPage(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	streams := groupOfTwo(t, db, 20)
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream)
	            SELECT 'iu', 'dry', ($1::text[])[1 + g % 20] FROM generate_series(1, 20000) g`, streams)
	m := run(t, db.Pool, "g-1", 10)
	requireCounts(t, m, map[string]int{"claimed": 0, "attempts_written": 0})
	if m["caught_up"] != false || m["window_open"] != true {
		t.Fatalf("a page of 10 must stop after 10 waypoints with the window open, not read the whole window: %v", m)
	}
	var waypoint *bool
	var behind int
	db.QueryRow(t, `
		SELECT iu_core.fn_iu_route_group_claims(e.id, e.event_stream, 0, 2048),
		       (SELECT count(*) FROM event_outbox o WHERE o.event_domain = 'iu' AND (o.txid, o.id) <= (c.window_txid, c.window_event_id))
		  FROM iu_route_worker_cursor c JOIN event_outbox e ON e.id = c.window_event_id
		 WHERE c.worker_name = 'g-1'`, nil, &waypoint, &behind)
	if waypoint == nil || *waypoint || behind < 100 || behind > 5000 {
		t.Fatalf("the keyset must sit on a waypoint (claims = false, got %v) about 640 rows in (between 100 and 5,000, got %d)", waypoint, behind)
	}
	sum := runUntilCaughtUp(t, db.Pool, "g-1", 10)
	if sum["claimed"] != 0 {
		t.Fatalf("g-1 routed %d events of g-2's streams", sum["claimed"])
	}
	_, window, _ := cursorPos(t, db, "g-1")
	if window != "" {
		t.Fatalf("g-1 must reach the window's end")
	}
}

// Rule: a member's run whose window holds only other members' events, none of them a
// waypoint (so its pages return nothing), is not idle: it writes its position past them,
// so no later run reads them again, and the next run is idle. Five events of g-2's streams,
// each drawn again until its id is not a waypoint.
func TestGroup_MemberWritesItsPositionPastOthersEvents(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	streams := groupOfTwo(t, db, 5)
	ctx := pgtest.Ctx(t)
	for _, s := range streams {
		for {
			tx, err := db.Pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var waypoint bool
			if err := tx.QueryRow(ctx, `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 'dry', $1)
			                            RETURNING iu_core.fn_iu_route_group_claims(id, event_stream, 0, 2048) IS NOT NULL`, s).Scan(&waypoint); err != nil {
				t.Fatal(err)
			}
			if waypoint {
				_ = tx.Rollback(ctx)
				continue
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	done0, _, _ := cursorPos(t, db, "g-1")
	m := run(t, db.Pool, "g-1", 100)
	requireCounts(t, m, map[string]int{"claimed": 0, "attempts_written": 0})
	done1, _, _ := cursorPos(t, db, "g-1")
	if m["idle"] != false || done1 == done0 {
		t.Fatalf("a window of others' events only must be passed and the position written (idle false, done moved): idle %v, done %q -> %q", m["idle"], done0, done1)
	}
	if m2 := run(t, db.Pool, "g-1", 100); m2["idle"] != true {
		t.Fatalf("the next run must be idle: %v", m2)
	}
	runUntilCaughtUp(t, db.Pool, "g-2", 100)
	if n := requireGroupExactlyOnce(t, db, "g"); n != 5 {
		t.Fatalf("want 5 events routed by the group, got %d", n)
	}
}

// Rule: a late commit reaches the owner of each of its events through branch (a) of the
// member's claim, whose per-transaction probe filters by bucket BEFORE its LIMIT: a
// transaction L writes 400 events over 40 streams (both members') and stays open while 300
// more commit and both members route them (their done snapshots list L in progress); L
// then commits and both members run again with batch 7, so branch (a) pages through L in
// steps of 7 of each member's own events. Every event has exactly one attempt of g, and
// each member wrote exactly the events of its buckets. (Filtered after the probe's LIMIT,
// a page of L would come back short and close the window with the member's later events
// of L never routed.)
func TestGroup_LateCommitRoutedByItsOwner(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	groupOfTwo(t, db, 1)
	ctx := pgtest.Ctx(t)
	connL := db.Conn(t)
	txL, err := connL.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer txL.Rollback(ctx) //nolint:errcheck
	if _, err := txL.Exec(ctx, `INSERT INTO event_outbox (event_domain, event_type, event_stream)
	                            SELECT 'iu', 'dry', 'st' || (g % 40) FROM generate_series(1, 400) g`); err != nil {
		t.Fatal(err)
	}
	var xidL string
	if err := txL.QueryRow(ctx, `SELECT pg_current_xact_id()::text`).Scan(&xidL); err != nil {
		t.Fatal(err)
	}
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream)
	            SELECT 'iu', 'dry', 'st' || (g % 40) FROM generate_series(1, 300) g`)
	for _, m := range []string{"g-1", "g-2"} {
		if sum := runUntilCaughtUp(t, db.Pool, m, 100); sum["claimed"] == 0 {
			t.Fatalf("%s routed nothing of the 300 committed events", m)
		}
		var inProgress bool
		db.QueryRow(t, `SELECT $2::xid8 = ANY (ARRAY(SELECT pg_snapshot_xip(done_snapshot))) FROM iu_route_worker_cursor WHERE worker_name = $1`,
			[]any{m, xidL}, &inProgress)
		if !inProgress {
			t.Fatalf("premise: %s's done snapshot must list L in progress", m)
		}
	}
	if err := txL.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"g-1", "g-2"} {
		runUntilCaughtUp(t, db.Pool, m, 7)
	}
	if n := requireGroupExactlyOnce(t, db, "g"); n != 700 {
		t.Fatalf("want 700 events routed by the group, got %d", n)
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
}

// Rule: a member reset to the start of the stream re-scans its own buckets only, and
// writes nothing twice: after both members routed 1,000 events of 40 streams, g-1 is reset
// (fn_iu_route_worker_reset_cursor) and runs until caught up with batch 150: it claims
// exactly its own events again, every one counted already_attempted (its pages written
// guarded, ON CONFLICT under the group's keys), none written; the group still has exactly
// one attempt per event.
func TestGroup_ResetMemberRescansItsBucketsGuarded(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	groupOfTwo(t, db, 1)
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream)
	            SELECT 'iu', 'dry', 'st' || (g % 40) FROM generate_series(1, 1000) g`)
	first := map[string]int{}
	for _, m := range []string{"g-1", "g-2"} {
		first[m] = runUntilCaughtUp(t, db.Pool, m, 150)["claimed"]
	}
	if first["g-1"] == 0 || first["g-1"]+first["g-2"] != 1000 {
		t.Fatalf("premise: the members routed %v of 1,000 events", first)
	}
	db.Exec(t, `SELECT fn_iu_route_worker_reset_cursor('g-1')`)
	again := runUntilCaughtUp(t, db.Pool, "g-1", 150)
	if again["claimed"] != first["g-1"] || again["already_attempted"] != first["g-1"] || again["attempts_written"] != 0 {
		t.Fatalf("the re-scan must claim g-1's %d events again, each already attempted, none written: %v", first["g-1"], again)
	}
	if n := requireGroupExactlyOnce(t, db, "g"); n != 1000 {
		t.Fatalf("want 1,000 events routed by the group, got %d", n)
	}
}
