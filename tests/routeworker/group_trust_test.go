package routeworker

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// holdWorkerLock takes a worker's (or group member's) advisory lock from a login with no
// grants at all (no grant is needed for pg_advisory_lock) and keeps it for the test; it
// returns that session, its pid and its login.
func holdWorkerLock(t *testing.T, db *pgtest.DB, worker string) (holder *pgx.Conn, pid float64, role string) {
	t.Helper()
	var lockID int
	db.QueryRow(t, `SELECT lock_id FROM iu_route_worker_cursor WHERE worker_name = $1`, []any{worker}, &lockID)
	role = "rw_nogrant_" + db.Name
	db.Exec(t, `CREATE ROLE `+role+` LOGIN PASSWORD 'pw'`)
	t.Cleanup(func() { _, _ = db.Pool.Exec(pgtest.Ctx(t), `DROP ROLE IF EXISTS `+role) })
	holder = db.ConnAs(t, role, "pw")
	if err := holder.QueryRow(pgtest.Ctx(t), `SELECT pg_backend_pid()::float8 FROM (SELECT pg_advisory_lock(26997, $1)) x`, lockID).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return holder, pid, role
}

// caughtUpGroup registers the members of a group, emits n events over the given number of
// streams and runs every member until the group has routed them all (three rounds: a
// member's first run may wait at its join's boundary for the others).
func caughtUpGroup(t *testing.T, db *pgtest.DB, group string, members []string, n, streams int) {
	t.Helper()
	for _, m := range members {
		db.Exec(t, `SELECT fn_iu_route_worker_register_member($1, $2)`, group, m)
	}
	emitStreams(t, db, n, streams)
	for round := 0; round < 3; round++ {
		for _, m := range members {
			runUntilCaughtUp(t, db.Pool, m, 100)
		}
	}
	requireGroupExactlyOnce(t, db, group)
}

// emitStreams inserts n committed iu events of type dry over the given number of streams.
func emitStreams(t *testing.T, db *pgtest.DB, n, streams int) {
	t.Helper()
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream)
	            SELECT 'iu', 'dry', 's' || (g % $2::int) FROM generate_series(1, $1::int) g`, n, streams)
}

// ageBeat moves a member's last beat an hour back, so a beat is due (and the row is stale)
// unless a run beats it again.
func ageBeat(t *testing.T, db *pgtest.DB, member string) {
	t.Helper()
	db.Exec(t, `UPDATE queue_heartbeat SET last_beat_at = now() - interval '1 hour' WHERE executor_id = $1`, member)
}

// beatAge is how long ago a member's heartbeat was last beaten, in seconds.
func beatAge(t *testing.T, db *pgtest.DB, member string) float64 {
	t.Helper()
	var age float64
	db.QueryRow(t, `SELECT extract(epoch FROM now() - last_beat_at)::float8 FROM queue_heartbeat WHERE executor_id = $1`, []any{member}, &age)
	return age
}

// Rule: a group member's heartbeat says that member's buckets are being routed, so only a
// run holding that member's lock beats it. When another session holds a member's lock
// (any login may take it, no grant needed), the member's runs answer busy, and its runner
// may still route for an orphaned member of the group (the takeover); before, that takeover
// beat the busy member's heartbeat, so it read fresh while its own buckets went unrouted
// behind the holder, for as long as any member of the group was orphaned. Group k: k-1's
// lock is held, k-3 is an orphan (its beat an hour old), events wait in every bucket. k-1's
// run takes k-3 over and routes its events; k-1's heartbeat stays where it was (stale), the
// answer says its own member was busy and names the holder, and k-1's own events are still
// unrouted.
func TestGroupTrust_ABusyMembersTakeoverBeatsNoOne(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	caughtUpGroup(t, db, "k", []string{"k-1", "k-2", "k-3"}, 300, 60)

	_, pid, _ := holdWorkerLock(t, db, "k-1")
	ageBeat(t, db, "k-1")
	ageBeat(t, db, "k-3") // k-3's runner is gone: an orphan
	emitStreams(t, db, 300, 60)

	out := run(t, db.Pool, "k-1", 1000)
	if out["took_over"] != true || out["member"] != "k-3" {
		t.Fatalf("k-1's run with its lock held: want a takeover of k-3, got %v", out)
	}
	if out["own_busy"] != true {
		t.Errorf("the takeover's answer must say k-1 itself was busy: %v", out)
	}
	holders, _ := out["lock_held_by"].([]any)
	if len(holders) != 1 || holders[0].(map[string]any)["pid"] != pid {
		t.Errorf("the takeover's answer must name k-1's lock holder (pid %v): %v", pid, out["lock_held_by"])
	}
	if age := beatAge(t, db, "k-1"); age < 3000 {
		t.Fatalf("k-1's heartbeat was beaten (%.0f s old) by a run that routed none of k-1's buckets", age)
	}
	if age := beatAge(t, db, "k-3"); age < 3000 {
		t.Fatalf("the orphan k-3's heartbeat was beaten (%.0f s old)", age)
	}
	var unrouted int
	db.QueryRow(t, `
		SELECT count(*) FROM event_outbox e
		  JOIN iu_route_group_member gm ON gm.member_name = 'k-1'
		 WHERE e.event_domain = 'iu'
		   AND iu_core.fn_iu_route_group_bucket(e.event_stream) >= gm.bucket_lo
		   AND iu_core.fn_iu_route_group_bucket(e.event_stream) <  gm.bucket_hi
		   AND NOT EXISTS (SELECT 1 FROM iu_route_attempt a WHERE a.worker_name = 'k' AND a.event_ref = e.id)`, nil, &unrouted)
	if unrouted == 0 {
		t.Fatalf("premise: k-1's own new events should be waiting behind its held lock")
	}
	var hint string
	db.QueryRow(t, `SELECT status_hint FROM v_queue_health WHERE source = 'heartbeat' AND subject = 'k-1'`, nil, &hint)
	if hint != "stale" {
		t.Errorf("v_queue_health must read k-1 stale while its lock is held and its buckets wait, got %q", hint)
	}
}

// Rule: a rebalance that cannot settle is not hidden. A member being removed routes its
// buckets up to the rebalance's boundary and then has nothing left to do; the settle takes
// each leaving member's lock, so a session that holds a leaving member's lock (any login may)
// halts the whole group: every member at the boundary waits. Before, each waiting run beat
// its member's heartbeat, so every member read fresh and the stale-check raised nothing,
// while events piled up (and the removed member, if paused for its removal, raised nothing
// either). Now a waiting run beats nothing while a leaving member at the boundary is held,
// and its answer names the holders (settle_blocked_by). Group h: h-3 is removed and reaches
// the boundary, a no-grant login holds its lock, h-1 and h-2 reach the boundary; h-1's next
// run waits, names the holder and leaves h-1's heartbeat stale; once the holder lets go, the
// next run settles and beats again.
func TestGroupTrust_ABlockedSettleIsNamedAndBeatsNoOne(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	caughtUpGroup(t, db, "h", []string{"h-1", "h-2", "h-3"}, 300, 50)
	db.Exec(t, `SELECT fn_iu_route_worker_remove_member('h', 'h-3')`)
	runUntilCaughtUp(t, db.Pool, "h-3", 100)
	_, pid, _ := holdWorkerLock(t, db, "h-3")
	emitStreams(t, db, 200, 50)
	for _, m := range []string{"h-1", "h-2"} {
		runUntilCaughtUp(t, db.Pool, m, 100)
	}

	ageBeat(t, db, "h-1")
	out := run(t, db.Pool, "h-1", 100)
	if out["waiting_for_rebalance"] != true {
		t.Fatalf("premise: h-1 at the boundary should wait for the settle, got %v", out)
	}
	blocked, _ := out["settle_blocked_by"].([]any)
	if len(blocked) != 1 {
		t.Fatalf("the waiting run must name the leaving member whose lock blocks the settle: %v", out)
	}
	b := blocked[0].(map[string]any)
	holders, _ := b["lock_held_by"].([]any)
	if b["member"] != "h-3" || len(holders) != 1 || holders[0].(map[string]any)["pid"] != pid {
		t.Fatalf("settle_blocked_by: want h-3 held by pid %v, got %v", pid, b)
	}
	if age := beatAge(t, db, "h-1"); age < 3000 {
		t.Fatalf("h-1's heartbeat was beaten (%.0f s old) by a run that waits on a blocked settle", age)
	}
	var hint string
	db.QueryRow(t, `SELECT status_hint FROM v_queue_health WHERE source = 'heartbeat' AND subject = 'h-1'`, nil, &hint)
	if hint != "stale" {
		t.Errorf("v_queue_health must read h-1 stale while the group cannot settle, got %q", hint)
	}

	// The holder lets go: the next run settles the hand-over and beats again.
	db.Exec(t, `SELECT pg_terminate_backend($1::int)`, int(pid))
	waitGone(t, db, int(pid))
	runUntilCaughtUp(t, db.Pool, "h-1", 100)
	runUntilCaughtUp(t, db.Pool, "h-2", 100)
	var left int
	db.QueryRow(t, `SELECT count(*) FROM iu_route_group_member WHERE member_name = 'h-3'`, nil, &left)
	if left != 0 {
		t.Fatalf("after the holder ended, the settle should have removed h-3")
	}
	if age := beatAge(t, db, "h-1"); age > 600 {
		t.Fatalf("after the settle, h-1's runs should beat again (%.0f s old)", age)
	}
	requireGroupExactlyOnce(t, db, "h")
}

// waitGone waits (at most 10 s, one statement a poll) until a terminated backend's locks
// are gone.
func waitGone(t *testing.T, db *pgtest.DB, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var held bool
		db.QueryRow(t, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1)`, []any{pid}, &held)
		if !held {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("backend %d still holds locks 10 s after it was terminated", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
