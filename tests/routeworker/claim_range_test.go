package routeworker

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// The claim's range branch (b): transactions that started after the position's done
// snapshot and completed by its window, one index range from the keyset position up to
// xmax(window). These tests hold it to the three things its clauses are written for: it is
// pruned to the partitions from the position up, it reads from the position (not from
// xmax(done)) and stops at the window's end, and its row estimate keeps the route join a
// hash join.

// lateCommitLoop says whether n is the claim's late-commit branch: the nested loop over the
// transactions the position's done snapshot lists in progress (read through
// fn_iu_route_worker_xip, or pg_snapshot_xip itself).
func lateCommitLoop(n planNode) bool {
	if n.NodeType != "Nested Loop" {
		return false
	}
	for _, c := range n.Plans {
		if c.NodeType == "Function Scan" && (c.FunctionName == "fn_iu_route_worker_xip" || c.FunctionName == "pg_snapshot_xip") {
			return true
		}
	}
	return false
}

// claimedIDs executes a prepared claim (genericClaimConn's, with its arguments) and returns
// the ids it claims, in its order.
func claimedIDs(t *testing.T, conn *pgx.Conn, call string) []string {
	t.Helper()
	rows, err := conn.Query(pgtest.Ctx(t), `EXECUTE `+call)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var id string
		err := r.Scan(&id, nil, nil, nil, nil)
		return id, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// rangeBranchScans returns the outbox partitions scanned by the claim's range branch in
// one EXPLAIN (FORMAT JSON) plan: every scan of event_outbox_* that is not under the
// late-commit branch (lateCommitLoop).
func rangeBranchScans(root planNode) map[string]bool {
	scans := map[string]bool{}
	var walk func(n planNode)
	walk = func(n planNode) {
		if lateCommitLoop(n) {
			return // branch (a)
		}
		if strings.HasPrefix(n.RelationName, "event_outbox") {
			scans[n.RelationName] = true
		}
		for _, c := range n.Plans {
			walk(c)
		}
	}
	walk(root)
	return scans
}

// Rule: a page's start-up does not grow with the history kept. The range branch's keyset
// bound is a row comparison, which PostgreSQL cannot prune partitions by; the branch also
// states txid >= xmax(done), which it can, when the statement starts. So with 30 closed
// partitions below the position, the prepared claim (the generic plan, as the run executes
// it) starts no scan on a partition that lies wholly below xmax(done), and it still returns
// exactly the window's events. (Without the bound every attached partition is set up and
// probed on every page: 30+ here, each one's index opened and descended.)
// Not parallel: transactions of concurrent tests would hold the position's xmin back.
func TestClaim_RangeBranchStartsOnlyFromThePositionsPartition(t *testing.T) {
	db, _ := setup(t)
	parts := manyPastPartitions(t, db, 30)
	if parts < 30 {
		t.Fatalf("setup: %d outbox partitions, want 30 or more", parts)
	}
	ctx := pgtest.Ctx(t)
	emit(t, db.Pool, "iu", typDry, 3) // before done: not the window's
	var done string
	db.QueryRow(t, `SELECT pg_current_snapshot()::text`, nil, &done)
	want := emit(t, db.Pool, "iu", typDry, 3)
	var window string
	db.QueryRow(t, `SELECT pg_current_snapshot()::text`, nil, &window)

	conn := genericClaimConn(t, db)
	call := `claim('iu', '` + done + `', '` + window + `', NULL, NULL, 100)`
	var raw []byte
	if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE `+call).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	scans := rangeBranchScans(decodePlan(t, raw))
	if len(scans) == 0 {
		t.Fatalf("no scan of the outbox in the claim's range branch: %s", raw)
	}
	// The partitions wholly below xmax(done): no event of the window can lie there.
	var below []string
	db.QueryRow(t, `
		SELECT coalesce(array_agg(partition_name ORDER BY partition_name), '{}')
		  FROM iu_history_partition
		 WHERE table_name = 'event_outbox'
		   AND upper_txid <= pg_snapshot_xmax($1::pg_snapshot)`, []any{done}, &below)
	if len(below) < 10 {
		t.Fatalf("setup: only %d of %d partitions lie below xmax(done) (want 10 or more to show pruning)", len(below), parts)
	}
	var started []string
	for _, p := range below {
		if scans[p] {
			started = append(started, p)
		}
	}
	if len(started) > 0 {
		t.Fatalf("the range branch starts a scan on %d partitions wholly below xmax(done) (of %d there; %d partitions started in all), e.g. %s",
			len(started), len(below), len(scans), started[0])
	}

	// The pruned plan claims exactly the window's events.
	ids := claimedIDs(t, conn, call)
	if fmt.Sprint(slices.Sorted(slices.Values(ids))) != fmt.Sprint(slices.Sorted(slices.Values(want))) {
		t.Fatalf("the generic claim over the window returned %v, want the window's events %v", ids, want)
	}
}

// Rule: a page reads from the keyset position, not from the start of the window, and stops
// at the window's end. The range branch has two lower bounds on txid (the keyset's row
// comparison and the scalar txid >= xmax(done) that prunes partitions) and a scalar upper
// bound; the btree must start at the position and end at
// xmax(window), however deep into one large transaction the position is. Measured as the
// buffers a page of 100 reads (the prepared claim, as the run executes it): at the start
// of a 20,000-event transaction, half-way through it, and at its last 50 events with 20,000
// more events committed after the window. A scan that started at xmax(done) would read
// ~10,000 index entries for the second page; one that did not stop at xmax(window) would
// read the 20,000 after it for the third.
func TestClaim_PageReadsFromThePositionToTheWindowsEnd(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	var done string
	db.QueryRow(t, `SELECT pg_current_snapshot()::text`, nil, &done)
	emit(t, db.Pool, "iu", typDry, 20000) // one transaction
	var window string
	db.QueryRow(t, `SELECT pg_current_snapshot()::text`, nil, &window)
	emit(t, db.Pool, "iu", typDry, 20000) // committed after the window
	db.Exec(t, `ANALYZE event_outbox`)
	var txid string
	db.QueryRow(t, `SELECT txid::text FROM event_outbox WHERE event_domain = 'iu' ORDER BY txid LIMIT 1`, nil, &txid)
	nth := func(n int) string {
		var id string
		db.QueryRow(t, `SELECT id::text FROM event_outbox WHERE event_domain = 'iu' AND txid = $1::xid8 ORDER BY id OFFSET $2 LIMIT 1`,
			[]any{txid, n - 1}, &id)
		return id
	}

	conn := genericClaimConn(t, db)
	page := func(afterID string, wantRows int) int {
		t.Helper()
		after := "NULL, NULL"
		if afterID != "" {
			after = "'" + txid + "', '" + afterID + "'"
		}
		var raw []byte
		if err := conn.QueryRow(pgtest.Ctx(t), `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE claim('iu', '`+done+`', '`+window+`', `+after+`, 100)`).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		root := decodePlan(t, raw)
		if int(root.ActualRows) != wantRows {
			t.Fatalf("claim after %q returned %v rows, want %d", afterID, root.ActualRows, wantRows)
		}
		return root.SharedHit + root.SharedRead
	}
	page("", 100) // the session's first call reads the catalog (the functions it calls)
	first := page("", 100)
	middle := page(nth(10000), 100)
	last := page(nth(19950), 50)
	t.Logf("buffers of a page of 100: %d at the window's start, %d half-way through a 20,000-event transaction, %d at its last 50 events", first, middle, last)
	if middle > 2*first+10 {
		t.Fatalf("a page half-way through the transaction read %d buffers against %d at its start: the scan does not start at the position", middle, first)
	}
	if last > 2*first+10 {
		t.Fatalf("the window's last page read %d buffers against %d for a full page: the scan does not stop at xmax(window)", last, first)
	}
}

// Rule: the page's events are joined to the domain's routes by a hash join, whatever the
// domain's size. A nested loop reads every route of the domain again for each event, and
// the generic plan would pick it whenever its estimate of the page's rows is low: the
// claim's range is a pair of bounds (estimated at 0.5 % of the domain) and each LIMIT of an
// unknown count at a tenth of its input, so on a domain of a few thousand events the
// estimate is a row or two. The claim's late-commit branch reads its transactions through
// fn_iu_route_worker_xip, whose row estimate keeps the page's estimate large. Checked on the
// run's own page statement (auto_explain of fn_iu_route_worker_run's nested statements)
// over 2,000 events, where the estimate is lowest, with a page of 500.
func TestPage_RouteJoinIsAHashJoinWhateverTheEstimate(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	db.Exec(t, `
		DO $$
		BEGIN
			FOR c IN 1 .. 4 LOOP
				INSERT INTO event_outbox (event_domain, event_type, event_stream)
				SELECT 'iu', CASE WHEN g % 3 = 0 THEN 'off' ELSE 'dry' END, 's' FROM generate_series(1, 500) g;
				COMMIT;
			END LOOP;
		END $$`)
	db.Exec(t, `VACUUM ANALYZE event_outbox`)
	db.Exec(t, `ANALYZE iu_outbound_route`)
	conn, plans := pgtest.ExplainedConn(t, db, "auto_explain.log_format = json")
	run(t, conn, b.worker, 500) // plans the run's statements
	plans()
	requireCounts(t, run(t, conn, b.worker, 500), map[string]int{"claimed": 500})
	var page *planNode
	for _, msg := range strings.Split(plans(), "\n{") {
		if !strings.Contains(msg, "iu_route_attempt") || !strings.Contains(msg, "iu_outbound_route") {
			continue
		}
		var doc struct {
			Plan planNode `json:"Plan"`
		}
		if err := json.Unmarshal([]byte("{"+msg[:strings.LastIndex(msg, "}")+1]), &doc); err != nil {
			t.Fatalf("decoding a plan auto_explain reported: %v: %s", err, msg)
		}
		page = &doc.Plan
	}
	if page == nil {
		t.Fatalf("no plan of the page statement (an INSERT into iu_route_attempt reading iu_outbound_route) among those reported")
	}
	var join, joinType string
	var find func(n planNode) bool
	find = func(n planNode) bool {
		for _, c := range n.Plans {
			if c.RelationName == "iu_outbound_route" || (c.NodeType == "Hash" && len(c.Plans) == 1 && c.Plans[0].RelationName == "iu_outbound_route") {
				join, joinType = n.NodeType, n.JoinType
				return true
			}
		}
		for _, c := range n.Plans {
			if find(c) {
				return true
			}
		}
		return false
	}
	if !find(*page) {
		t.Fatalf("no join with iu_outbound_route in the page statement's plan")
	}
	// Left: the routes are the hashed side and the claim's events probe it in the claim's
	// order, which is the order the audit rows are written in (a Right join would hash the
	// events and return them in no order).
	if join != "Hash Join" || joinType != "Left" {
		t.Fatalf("the run's page statement joins the routes by %s (%s), want Hash Join (Left: the routes hashed)", join, joinType)
	}
}
