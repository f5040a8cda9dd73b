package routeworker

import "testing"

// Bounded surfaces: the backlog a health surface counts stops at 10,000 and says so
// (backlog_capped), so looking at a worker that never ran costs the same on a long log as
// on a short one. Below the cap the count is exact; the oldest waiting event is reported.
func TestSurfaces_BacklogIsCountedUpToACap(t *testing.T) {
	t.Parallel()
	db, b := setup(t)
	db.Exec(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream)
	            SELECT 'iu', 'dry', 'main' FROM generate_series(1, 10050)`)
	var backlog int
	var capped bool
	db.QueryRow(t, `SELECT backlog, backlog_capped FROM v_iu_route_worker_status WHERE worker_name = $1`,
		[]any{b.worker}, &backlog, &capped)
	if backlog != 10000 || !capped {
		t.Fatalf("10,050 waiting events: want backlog 10000 capped, got %d capped=%v", backlog, capped)
	}
	var h map[string]any
	db.QueryRow(t, `SELECT fn_iu_route_worker_health($1)`, []any{b.worker}, &h)
	if h["backlog_capped"] != true || h["backlog"] != float64(10000) || h["oldest_pending_created_at"] == nil {
		t.Fatalf("health: %v", h)
	}
	requireCounts(t, run(t, db.Pool, b.worker, 1000), map[string]int{"claimed": 1000})
	db.QueryRow(t, `SELECT backlog, backlog_capped FROM v_iu_route_worker_status WHERE worker_name = $1`,
		[]any{b.worker}, &backlog, &capped)
	if backlog != 9050 || capped {
		t.Fatalf("after routing 1,000: want exact backlog 9050, got %d capped=%v", backlog, capped)
	}
}
