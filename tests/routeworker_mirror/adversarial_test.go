package routeworkermirror

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iu-core/event-worker/internal/pgtest"
	"github.com/iu-core/event-worker/tests/routeworker_mirror/decision"
)

// adversarialNames are the names a careless or hostile caller hands the package: empty and
// blank ones (space, tab, newline, form feed, vertical tab), ':' anywhere, the 'none'
// placeholder in any case, names at and just past the 200-byte bound (ASCII and multibyte,
// so bytes and characters differ), surrounding whitespace, and quotes.
func adversarialNames() []string {
	return []string{
		"", " ", "\t", "\n", " \t\r\n\f\v ", "\f", "\v",
		":", "a:b", ":lead", "trail:", "iu_wrk:x:y",
		"none", "NONE", "None", " none ",
		"w", " w", "w ", "\tw\n", "it's", `dq"x`, "back\\slash", "é", "日本",
		strings.Repeat("x", 199), strings.Repeat("x", 200), strings.Repeat("x", 201),
		strings.Repeat("é", 100), strings.Repeat("é", 101), // 200 and 202 bytes, 100 and 101 characters
		strings.Repeat("x", 199) + "é", // 201 bytes, 200 characters
		strings.Repeat("x", 2700),      // past btree's row limit: refused before any index sees it
	}
}

// randomName draws from an alphabet rich in what breaks names: ':', blanks, multibyte runes.
func randomName(rng *rand.Rand) string {
	alphabet := []string{"a", "z", "_", "0", ":", " ", "\t", "\n", "é", "日", "-", "."}
	n := rng.IntN(12)
	if rng.IntN(8) == 0 {
		n = 190 + rng.IntN(20) // straddle the byte bound
	}
	var b strings.Builder
	for range n {
		b.WriteString(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}

// sqlRefused runs stmt in a savepoint-free, single-statement way and reports whether the
// database refused it with the given SQLSTATE; any other error fails the test.
func sqlRefused(ctx context.Context, t *testing.T, db *pgtest.DB, code, stmt string, args ...any) bool {
	t.Helper()
	_, err := db.Pool.Exec(ctx, stmt, args...)
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != code {
		t.Fatalf("%s %q: want success or SQLSTATE %s, got %v", stmt, args, code, err)
	}
	return true
}

// The decision contract has one authority in SQL (fn_iu_route_decide, fn_iu_route_idempotency_key,
// the name rules of register/run and the route_key CHECK) and one mirror in Go
// (tests/routeworker_mirror/decision). On adversarial inputs they agree: every worker name the SQL refuses
// (22023) Go refuses too and vice versa; every route key the iu_outbound_route CHECK refuses
// (23514) Go refuses too and vice versa; for every accepted worker and route key, and every
// route state (absent = NULL route fields, disabled, dry-run, live), the SQL decision and key
// functions return what Decide returns; and a real run of each accepted worker writes, per
// event, exactly the status, key and dead letter the mirror predicts.
func TestMirror_AdversarialInputsAgree(t *testing.T) {
	t.Parallel()
	sd := seed(t)
	rng := rand.New(rand.NewPCG(sd, sd^0x5bd1e995))
	db := pgtest.NewDB(t)
	ctx := pgtest.Ctx(t)

	names := adversarialNames()
	for range 60 {
		names = append(names, randomName(rng))
	}

	// 1. Worker names: register and run refuse exactly what Go refuses.
	var workers []string
	seenWorker := map[string]bool{}
	for _, name := range names {
		goErr := decision.ValidateWorkerName(name)
		regRefused := sqlRefused(ctx, t, db, "22023", `SELECT fn_iu_route_worker_register($1)`, name)
		runRefused := sqlRefused(ctx, t, db, "22023", `SELECT fn_iu_route_worker_run($1, 10)`, name)
		if regRefused != (goErr != nil) || runRefused != (goErr != nil) {
			t.Errorf("worker name %q (%d bytes): SQL register refused=%v run refused=%v, Go: %v",
				name, len(name), regRefused, runRefused, goErr)
		}
		if goErr == nil && !seenWorker[name] {
			seenWorker[name] = true
			workers = append(workers, name)
		}
	}

	// 2. Route keys: the CHECK refuses exactly what Go refuses. Each accepted key gets its own
	// (type, stream) so the accepted routes can all be live at once.
	type route struct {
		typ string
		r   decision.Route
	}
	var routes []route
	seenKey := map[string]bool{}
	for i, key := range names {
		if seenKey[key] {
			continue // route_key is UNIQUE; the generator repeats itself now and then
		}
		typ := fmt.Sprintf("adv_t%d", i)
		refused := sqlRefused(ctx, t, db, "23514",
			`INSERT INTO iu_outbound_route (event_domain, event_type, event_stream, route_key) VALUES ('iu', $1, 's', $2)`, typ, key)
		if refused != !decision.ValidRouteKey(key) {
			t.Errorf("route key %q (%d bytes): CHECK refused=%v, Go valid=%v", key, len(key), refused, decision.ValidRouteKey(key))
		}
		if !refused {
			seenKey[key] = true
			r := decision.Route{Found: true, Key: key, Kind: "outbound"}
			switch i % 3 { // every route state, spread over the keys
			case 0:
				r.Enabled, r.DryRun = false, rng.IntN(2) == 0
			case 1:
				r.Enabled, r.DryRun = true, true
			case 2:
				r.Enabled, r.DryRun = true, false
			}
			db.Exec(t, `UPDATE iu_outbound_route SET enabled = $2, dry_run = $3 WHERE route_key = $1`, key, r.Enabled, r.DryRun)
			routes = append(routes, route{typ, r})
		}
	}
	if len(workers) < 10 || len(routes) < 10 {
		t.Fatalf("seed %d: the generator accepted too little to compare (%d workers, %d routes)", sd, len(workers), len(routes))
	}

	// 3. The SQL decision and key functions against the mirror, route fields NULL included.
	const evID = "0b5c5f0e-7d5e-4a43-9a55-3c7f0d6f2a10"
	cases := []decision.Route{{}} // no route: NULL key, enabled and dry_run
	for _, r := range routes {
		cases = append(cases, r.r)
	}
	for _, w := range workers {
		for _, r := range cases {
			want := decision.Decide(decision.Input{
				Worker: decision.Worker{Name: w}, Event: decision.Event{ID: evID, Domain: "iu"},
				Route: r, Delivery: decision.Delivery{Outcome: decision.OutcomeSent}})
			var key, enabled, dry any
			if r.Found {
				key, enabled, dry = r.Key, r.Enabled, r.DryRun
			}
			var gotDecision, gotKey string
			db.QueryRow(t, `SELECT iu_core.fn_iu_route_decide($1, $2, $3), iu_core.fn_iu_route_idempotency_key($4, $1, $5::uuid)`,
				[]any{key, enabled, dry, w, evID}, &gotDecision, &gotKey)
			wantDecision := string(want.Status)
			if want.Status == decision.StatusSent { // the SQL hands it to the seam, which decides sent/failed
				wantDecision = "deliver"
			}
			if gotDecision != wantDecision || gotKey != want.IdempotencyKey {
				t.Errorf("worker %q route %+v: SQL %s %q, mirror %s %q", w, r, gotDecision, gotKey, wantDecision, want.IdempotencyKey)
			}
		}
	}

	// 4. Real runs: one event per route plus one without a route, every accepted worker.
	db.Exec(t, `UPDATE dot_config SET value = 'true' WHERE key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled')`)
	type ev struct {
		id string
		r  decision.Route
	}
	var evs []ev
	for _, r := range append(routes, route{typ: "adv_unrouted"}) {
		var id string
		db.QueryRow(t, `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', $1, 's') RETURNING id::text`,
			[]any{r.typ}, &id)
		evs = append(evs, ev{id, r.r})
	}
	mismatches := 0
	for _, w := range workers {
		for {
			s := run(ctx, t, db, w, 500)
			if s.Claimed == 0 && s.CaughtUp {
				break
			}
		}
		for _, e := range evs {
			want := decision.Decide(decision.Input{Worker: decision.Worker{Name: w},
				Event: decision.Event{ID: e.id, Domain: "iu"}, Route: e.r, Delivery: decision.SeamFailClosed()})
			var status, key, code string
			var dead int
			db.QueryRow(t, `SELECT a.status, a.idempotency_key, coalesce(a.error_code, ''),
			                       (SELECT count(*) FROM iu_route_dead_letter d WHERE d.idempotency_key = a.idempotency_key)
			                  FROM iu_route_attempt a WHERE a.worker_name = $1 AND a.event_ref = $2::uuid`,
				[]any{w, e.id}, &status, &key, &code, &dead)
			if status != string(want.Status) || key != want.IdempotencyKey || code != want.ErrorCode || (dead == 1) != want.DeadLetter {
				mismatches++
				if mismatches <= 20 {
					t.Errorf("seed %d worker %q event %s route %+v: SQL %s %q %q dead=%d; mirror %+v",
						sd, w, e.id, e.r, status, key, code, dead, want)
				}
			}
		}
	}
	t.Logf("seed %d: %d names tried; %d workers and %d route keys accepted; %d decision cases and %d run cases agree",
		sd, len(names), len(workers), len(routes), len(workers)*len(cases), len(workers)*len(evs)-mismatches)
}
