package routeworker

import (
	"strings"
	"testing"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule: the claim's late-commit branch starts a scan only on the outbox partitions the
// position's in-progress transactions can lie in. That branch probes the outbox once per
// transaction the stored done_snapshot lists in progress, and every such transaction id
// lies in [xmin(done), xmax(done)). The branch says so in scalar bounds of txid, which
// PostgreSQL prunes by when the statement starts, so a page's start-up does not build an
// index scan on every partition history keeps. (Without the bounds the probe's partition
// is known only row by row, and every attached partition is set up on every page: 30+
// here.) The late commit is still claimed, through the one partition that holds it.
// Not parallel: transactions of concurrent tests would hold the position's xmin back.
func TestClaim_LateCommitBranchStartsOnlyThePositionsPartitions(t *testing.T) {
	db, _ := setup(t)
	parts := manyPastPartitions(t, db, 30)
	if parts < 30 {
		t.Fatalf("setup: %d outbox partitions, want 30 or more", parts)
	}
	ctx := pgtest.Ctx(t)

	// A producer's transaction is in progress when done is taken, and commits before the
	// window: its event is a late commit the position owes.
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	late := emit1(t, tx, typDry)
	// A snapshot lists in progress only ids below its xmax (the latest completed one + 1):
	// one more transaction completes first, so done lists the producer's.
	emit1(t, db.Pool, typDry)
	var done string
	db.QueryRow(t, `SELECT pg_current_snapshot()::text`, nil, &done)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	var window string
	db.QueryRow(t, `SELECT pg_current_snapshot()::text`, nil, &window)
	if strings.SplitN(done, ":", 3)[2] == "" {
		t.Fatalf("setup: done snapshot %s lists no transaction in progress", done)
	}

	conn := genericClaimConn(t, db)
	var raw []byte
	call := `claim('iu', '` + done + `', '` + window + `', NULL, NULL, 100)`
	if err := conn.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE `+call).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	root := decodePlan(t, raw)

	// The late-commit branch is the nested loop over done's in-progress xids; collect the outbox
	// partitions started under it.
	lateBranch := map[string]bool{}
	var found bool
	walkPlan(root, func(n planNode) {
		if !lateCommitLoop(n) {
			return
		}
		found = true
		walkPlan(n, func(m planNode) {
			if strings.HasPrefix(m.RelationName, "event_outbox") {
				lateBranch[m.RelationName] = true
			}
		})
	})
	if !found {
		t.Fatalf("no late-commit branch (a nested loop over done's in-progress xids) in the claim's plan: %s", raw)
	}
	// The partitions a listed transaction can lie in: those overlapping [xmin, xmax) of done.
	var owed []string
	db.QueryRow(t, `
		SELECT coalesce(array_agg(partition_name ORDER BY partition_name), '{}')
		  FROM iu_history_partition
		 WHERE table_name = 'event_outbox'
		   AND (upper_txid IS NULL OR upper_txid > pg_snapshot_xmin($1::pg_snapshot))
		   AND (lower_txid IS NULL OR lower_txid < pg_snapshot_xmax($1::pg_snapshot))`, []any{done}, &owed)
	allowed := map[string]bool{}
	for _, p := range owed {
		allowed[p] = true
	}
	for p := range lateBranch {
		if !allowed[p] {
			t.Fatalf("the late-commit branch starts a scan on %s, where no transaction done lists can lie (%d partitions started there of %d; allowed %v)",
				p, len(lateBranch), parts, owed)
		}
	}
	if parts-len(owed) < 10 {
		t.Fatalf("setup: only %d of %d partitions lie outside done's [xmin, xmax) (want 10 or more to show pruning)", parts-len(owed), parts)
	}

	// And the pruned plan still claims the late commit: the window holds exactly one event
	// done did not see.
	ids := claimedIDs(t, conn, call)
	if len(ids) != 1 || ids[0] != late {
		t.Fatalf("the generic claim over the window returned %v, want only the late commit %s", ids, late)
	}
}
