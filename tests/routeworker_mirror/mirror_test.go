package routeworkermirror

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
	"github.com/iu-core/event-worker/tests/routeworker_mirror/decision"
)

// defaultSeed makes the generated cases the same on every run; MIRROR_SEED=n explores
// another set (the seed is printed on failure so a failing set can be replayed).
const defaultSeed = 20261121

func seed(t *testing.T) uint64 {
	if s := os.Getenv("MIRROR_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("MIRROR_SEED=%q: %v", s, err)
		}
		return n
	}
	return defaultSeed
}

var (
	workers = []decision.Worker{
		{Name: "mw_alpha", Domain: "iu"},
		{Name: "mw_beta"}, // default domain: iu
		{Name: "mw_ops", Domain: "ops"},
	}
	eventDomains = []string{"iu", "iu", "iu", "ops", "ops", "system"} // weighted: mostly iu
	eventTypes   = []string{"t0", "t1", "t2", "t3", "t4"}
	eventStreams = []string{"s0", "s1", "s2"}
	routeKinds   = []string{"outbound", "webhook", "queue"}
	batchLimits  = []int{1, 2, 3, 7, 50, 500}
)

type match struct{ domain, typ, stream string }

type event struct {
	id string
	match
}

// routeTable is the generated iu_outbound_route content: absent matches have no entry.
type routeTable map[match]decision.Route

func randomRoute(rng *rand.Rand, m match) (decision.Route, bool) {
	if rng.IntN(10) < 3 { // 30 %: no route
		return decision.Route{}, false
	}
	return decision.Route{
		Found:   true,
		Enabled: rng.IntN(2) == 0,
		DryRun:  rng.IntN(2) == 0,
		Key:     fmt.Sprintf("rk_%s_%s_%s_%d", m.domain, m.typ, m.stream, rng.IntN(1000)),
		Kind:    routeKinds[rng.IntN(len(routeKinds))],
	}, true
}

func allMatches() []match {
	var ms []match
	for _, d := range []string{"iu", "ops", "system"} {
		for _, ty := range eventTypes {
			for _, s := range eventStreams {
				ms = append(ms, match{d, ty, s})
			}
		}
	}
	return ms
}

// writeRoutes replaces iu_outbound_route with the table.
func writeRoutes(ctx context.Context, t *testing.T, db *pgtest.DB, routes routeTable) {
	t.Helper()
	tx, err := db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `DELETE FROM iu_outbound_route`); err != nil {
		t.Fatal(err)
	}
	for m, r := range routes {
		if _, err := tx.Exec(ctx, `INSERT INTO iu_outbound_route (event_domain, event_type, event_stream, route_key, route_kind, enabled, dry_run)
		                           VALUES ($1, $2, $3, $4, $5, $6, $7)`, m.domain, m.typ, m.stream, r.Key, r.Kind, r.Enabled, r.DryRun); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// insertEvents appends n random events in one transaction and returns them with their ids.
func insertEvents(ctx context.Context, t *testing.T, db *pgtest.DB, rng *rand.Rand, n int) []event {
	t.Helper()
	ds, ts, ss := make([]string, n), make([]string, n), make([]string, n)
	for i := range n {
		ds[i] = eventDomains[rng.IntN(len(eventDomains))]
		ts[i] = eventTypes[rng.IntN(len(eventTypes))]
		ss[i] = eventStreams[rng.IntN(len(eventStreams))]
	}
	rows, err := db.Pool.Query(ctx, `
		INSERT INTO event_outbox (event_domain, event_type, event_stream)
		SELECT d, ty, s FROM unnest($1::text[], $2::text[], $3::text[]) AS u(d, ty, s)
		RETURNING id::text, event_domain, event_type, event_stream`, ds, ts, ss)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (event, error) {
		var e event
		err := r.Scan(&e.id, &e.domain, &e.typ, &e.stream)
		return e, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

type runSummary struct {
	Gated           bool   `json:"gated"`
	Busy            bool   `json:"busy"`
	Reason          string `json:"reason"`
	Claimed         int    `json:"claimed"`
	AttemptsWritten int    `json:"attempts_written"`
	DeadLettered    int    `json:"dead_lettered"`
	DryRun          int    `json:"dry_run"`
	Disabled        int    `json:"disabled"`
	Skipped         int    `json:"skipped"`
	Failed          int    `json:"failed"`
	Sent            int    `json:"sent"`
	CaughtUp        bool   `json:"caught_up"`
}

func run(ctx context.Context, t *testing.T, db *pgtest.DB, worker string, limit int) runSummary {
	t.Helper()
	var raw []byte
	if err := db.Pool.QueryRow(ctx, `SELECT fn_iu_route_worker_run($1, $2)`, worker, limit).Scan(&raw); err != nil {
		t.Fatalf("fn_iu_route_worker_run(%s, %d): %v", worker, limit, err)
	}
	var s runSummary
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("run summary %s: %v", raw, err)
	}
	if s.Busy {
		t.Fatalf("run of %s reported busy with no concurrent run: %s", worker, raw)
	}
	return s
}

// tally counts statuses and dead letters, for comparing run summaries with the mirror.
type tally struct {
	claimed, dead int
	byStatus      map[decision.Status]int
}

func (ta *tally) add(d decision.Decision) {
	if !d.Claimed {
		return
	}
	if ta.byStatus == nil {
		ta.byStatus = map[decision.Status]int{}
	}
	ta.claimed++
	ta.byStatus[d.Status]++
	if d.DeadLetter {
		ta.dead++
	}
}

func (ta *tally) addRun(s runSummary) {
	if ta.byStatus == nil {
		ta.byStatus = map[decision.Status]int{}
	}
	ta.claimed += s.Claimed
	ta.dead += s.DeadLettered
	ta.byStatus[decision.StatusDryRun] += s.DryRun
	ta.byStatus[decision.StatusDisabled] += s.Disabled
	ta.byStatus[decision.StatusSkipped] += s.Skipped
	ta.byStatus[decision.StatusFailed] += s.Failed
	ta.byStatus[decision.StatusSent] += s.Sent
}

func (ta tally) String() string {
	return fmt.Sprintf("claimed=%d dead=%d dry_run=%d disabled=%d skipped=%d failed=%d sent=%d", ta.claimed, ta.dead,
		ta.byStatus[decision.StatusDryRun], ta.byStatus[decision.StatusDisabled], ta.byStatus[decision.StatusSkipped],
		ta.byStatus[decision.StatusFailed], ta.byStatus[decision.StatusSent])
}

type caseKey struct{ worker, eventID string }

// expectation is the mirror's answer for one (worker, event), with the case that produced it.
type expectation struct {
	in  decision.Input
	out decision.Decision
}

type attemptRow struct {
	status, key, routeKey, routeKind, errorCode string
	attemptNo                                   int
}

type deadLetterRow struct{ key, errorCode, routeKey string }

// The SQL worker and the Go mirror agree on every generated case — status,
// idempotency key and dead-letter decision per (worker, event); out-of-domain events are
// claimed by neither; closed gates claim nothing (the events wait and are decided later
// with the routes as they are then); and the per-run summaries add up to the mirror's
// counts. Cases: deterministic seeded random — 3 workers (two on 'iu', one on 'ops'),
// events in 'iu', 'ops' and 'system', routes absent / disabled / enabled dry-run /
// enabled live (the live seam fails closed: failed + dead letter 0A000), rewritten every
// round, random batch limits, several inserting transactions per round.
func TestMirror_SQLWorkerAgreesWithDecisionMirror(t *testing.T) {
	t.Parallel()
	sd := seed(t)
	rng := rand.New(rand.NewPCG(sd, sd^0x9e3779b97f4a7c15))
	db := pgtest.NewDB(t)
	ctx := pgtest.Ctx(t)

	for _, w := range workers {
		dom := w.Domain
		if dom == "" {
			db.Exec(t, `SELECT fn_iu_route_worker_register($1)`, w.Name) // the DEFAULT 'iu'
		} else {
			db.Exec(t, `SELECT fn_iu_route_worker_register($1, $2)`, w.Name, dom)
		}
	}

	routes := routeTable{}
	for _, m := range allMatches() {
		if r, ok := randomRoute(rng, m); ok {
			routes[m] = r
		}
	}

	expected := map[caseKey]expectation{}
	pending := map[string][]event{}    // per worker: inserted, not yet decided
	mirrorTally := map[string]*tally{} // per worker, from the mirror
	sqlTally := map[string]*tally{}    // per worker, from run summaries
	for _, w := range workers {
		mirrorTally[w.Name], sqlTally[w.Name] = &tally{}, &tally{}
	}
	const rounds = 8
	gatedRuns := 0
	for round := range rounds {
		// Rewrite about a quarter of the matches: routes appear, vanish, flip.
		for _, m := range allMatches() {
			if round == 0 || rng.IntN(4) == 0 {
				if r, ok := randomRoute(rng, m); ok {
					routes[m] = r
				} else {
					delete(routes, m)
				}
			}
		}
		// route_key is UNIQUE: regenerate clashes (the random suffix rarely collides).
		seen := map[string]bool{}
		for m, r := range routes {
			for seen[r.Key] {
				r.Key += "x"
			}
			seen[r.Key] = true
			routes[m] = r
		}
		writeRoutes(ctx, t, db, routes)

		for range 1 + rng.IntN(3) {
			evs := insertEvents(ctx, t, db, rng, 20+rng.IntN(60))
			for _, w := range workers {
				pending[w.Name] = append(pending[w.Name], evs...)
			}
		}

		// Gates: mostly open; sometimes one or both closed (fail-closed: nothing claimed).
		gates := decision.Gates{Master: true, Worker: true}
		switch rng.IntN(6) {
		case 0:
			gates.Master = false
		case 1:
			gates.Worker = false
		}
		setGate := func(key string, open bool) {
			db.Exec(t, `UPDATE dot_config SET value = $2 WHERE key = $1`, key, strconv.FormatBool(open))
		}
		setGate("iu_core.routes_enabled", gates.Master)
		setGate("iu_core.route_worker_enabled", gates.Worker)

		for _, w := range workers {
			if !gates.Open() {
				s := run(ctx, t, db, w.Name, batchLimits[rng.IntN(len(batchLimits))])
				gatedRuns++
				for _, e := range pending[w.Name] {
					in := decision.Input{Worker: w, Event: decision.Event{ID: e.id, Domain: e.domain, Type: e.typ, Stream: e.stream}}
					if d := decision.DecideGated(gates, in); d.Claimed {
						t.Fatalf("seed %d: mirror claims behind closed gates: %+v", sd, d)
					}
				}
				if !s.Gated || s.Claimed != 0 || s.AttemptsWritten != 0 {
					t.Fatalf("seed %d round %d: gates %+v closed but %s ran: %+v", sd, round, gates, w.Name, s)
				}
				continue // the events stay pending for a later round
			}
			limit := batchLimits[rng.IntN(len(batchLimits))]
			for i := 0; ; i++ {
				if i > 1000 {
					t.Fatalf("seed %d: %s does not catch up with batch %d", sd, w.Name, limit)
				}
				s := run(ctx, t, db, w.Name, limit)
				if s.Gated {
					t.Fatalf("seed %d: open gates but the run was gated: %+v", sd, s)
				}
				sqlTally[w.Name].addRun(s)
				if s.Claimed > limit {
					t.Fatalf("seed %d: claimed %d over the batch limit %d", sd, s.Claimed, limit)
				}
				if s.Claimed == 0 && s.CaughtUp {
					break
				}
			}
			// Caught up: every pending event was decided with the routes of this round.
			for _, e := range pending[w.Name] {
				in := decision.Input{
					Worker:   w,
					Event:    decision.Event{ID: e.id, Domain: e.domain, Type: e.typ, Stream: e.stream},
					Route:    routes[e.match],
					Delivery: decision.SeamFailClosed(),
				}
				if err := in.Validate(); err != nil {
					t.Fatalf("generated an invalid case %+v: %v", in, err)
				}
				d := decision.DecideGated(gates, in)
				expected[caseKey{w.Name, e.id}] = expectation{in, d}
				mirrorTally[w.Name].add(d)
			}
			pending[w.Name] = nil
		}
	}
	// Drain what the last closed-gate rounds left, with the gates open.
	db.Exec(t, `UPDATE dot_config SET value = 'true' WHERE key IN ('iu_core.routes_enabled', 'iu_core.route_worker_enabled')`)
	for _, w := range workers {
		for {
			s := run(ctx, t, db, w.Name, 500)
			sqlTally[w.Name].addRun(s)
			if s.Claimed == 0 && s.CaughtUp {
				break
			}
		}
		for _, e := range pending[w.Name] {
			in := decision.Input{Worker: w, Event: decision.Event{ID: e.id, Domain: e.domain, Type: e.typ, Stream: e.stream},
				Route: routes[e.match], Delivery: decision.SeamFailClosed()}
			d := decision.Decide(in)
			expected[caseKey{w.Name, e.id}] = expectation{in, d}
			mirrorTally[w.Name].add(d)
		}
	}

	attempts := map[caseKey][]attemptRow{}
	rows, err := db.Pool.Query(ctx, `SELECT worker_name, event_ref::text, status, idempotency_key, coalesce(route_key, ''),
	                                        coalesce(route_kind, ''), coalesce(error_code, ''), attempt_no
	                                   FROM iu_route_attempt`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var w, id string
		var a attemptRow
		if err := rows.Scan(&w, &id, &a.status, &a.key, &a.routeKey, &a.routeKind, &a.errorCode, &a.attemptNo); err != nil {
			t.Fatal(err)
		}
		attempts[caseKey{w, id}] = append(attempts[caseKey{w, id}], a)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	deadLetters := map[caseKey][]deadLetterRow{}
	rows, err = db.Pool.Query(ctx, `SELECT worker_name, event_id::text, idempotency_key, coalesce(error_code, ''), coalesce(route_key, '')
	                                  FROM iu_route_dead_letter`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var w, id string
		var d deadLetterRow
		if err := rows.Scan(&w, &id, &d.key, &d.errorCode, &d.routeKey); err != nil {
			t.Fatal(err)
		}
		deadLetters[caseKey{w, id}] = append(deadLetters[caseKey{w, id}], d)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}

	// Compare every case, in a stable order so a failure report is reproducible.
	keys := make([]caseKey, 0, len(expected))
	for k := range expected {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].worker != keys[j].worker {
			return keys[i].worker < keys[j].worker
		}
		return keys[i].eventID < keys[j].eventID
	})
	mismatches := 0
	report := func(k caseKey, x expectation, format string, args ...any) {
		mismatches++
		if mismatches <= 20 {
			t.Errorf("seed %d, worker %s, event %s (%s/%s/%s), route %+v: %s", sd, k.worker, k.eventID,
				x.in.Event.Domain, x.in.Event.Type, x.in.Event.Stream, x.in.Route, fmt.Sprintf(format, args...))
		}
	}
	statusSeen := map[decision.Status]int{}
	unclaimed := 0
	for _, k := range keys {
		x := expected[k]
		got, dls := attempts[k], deadLetters[k]
		if !x.out.Claimed {
			unclaimed++
			if len(got) != 0 || len(dls) != 0 {
				report(k, x, "mirror: not claimed (%s); SQL wrote %d attempts, %d dead letters", x.out.Reason, len(got), len(dls))
			}
			continue
		}
		statusSeen[x.out.Status]++
		if len(got) != 1 {
			report(k, x, "mirror: one attempt (%s); SQL wrote %d: %+v", x.out.Status, len(got), got)
			continue
		}
		a := got[0]
		if a.status != string(x.out.Status) || a.key != x.out.IdempotencyKey || a.attemptNo != 1 ||
			a.routeKey != x.out.RouteKey || a.routeKind != x.out.RouteKind || a.errorCode != x.out.ErrorCode {
			report(k, x, "mirror: status=%s key=%s route=%s/%s code=%q; SQL: %+v", x.out.Status, x.out.IdempotencyKey,
				x.out.RouteKey, x.out.RouteKind, x.out.ErrorCode, a)
		}
		switch {
		case x.out.DeadLetter && len(dls) != 1:
			report(k, x, "mirror: dead letter; SQL has %d", len(dls))
		case x.out.DeadLetter && (dls[0].key != x.out.IdempotencyKey || dls[0].errorCode != x.out.ErrorCode || dls[0].routeKey != x.out.RouteKey):
			report(k, x, "mirror: dead letter key=%s code=%s; SQL: %+v", x.out.IdempotencyKey, x.out.ErrorCode, dls[0])
		case !x.out.DeadLetter && len(dls) != 0:
			report(k, x, "mirror: no dead letter; SQL has %+v", dls)
		}
	}
	// Nothing the mirror did not predict.
	for k := range attempts {
		if _, ok := expected[k]; !ok {
			t.Errorf("seed %d: SQL wrote attempts for an unknown case %+v: %+v", sd, k, attempts[k])
		}
	}
	for k := range deadLetters {
		if _, ok := expected[k]; !ok {
			t.Errorf("seed %d: SQL dead-lettered an unknown case %+v", sd, k)
		}
	}
	for _, w := range workers {
		if m, s := mirrorTally[w.Name].String(), sqlTally[w.Name].String(); m != s {
			t.Errorf("seed %d, worker %s: run summaries add up to %s, the mirror to %s", sd, w.Name, s, m)
		}
	}
	if mismatches > 0 {
		t.Fatalf("seed %d: %d of %d cases disagree", sd, mismatches, len(expected))
	}
	// The generator must have covered the contract, or agreement proves little.
	for _, st := range []decision.Status{decision.StatusDryRun, decision.StatusDisabled, decision.StatusSkipped, decision.StatusFailed} {
		if statusSeen[st] == 0 {
			t.Errorf("seed %d: no case produced status %s", sd, st)
		}
	}
	if unclaimed == 0 || gatedRuns == 0 {
		t.Errorf("seed %d: want out-of-domain cases (%d) and gated runs (%d)", sd, unclaimed, gatedRuns)
	}
	// The second idempotency layer: after fn_iu_route_worker_reset_cursor the re-scan
	// decides every event again with today's routes; an attempt is written only where the
	// mirror's key is new (the route of that match changed since), never twice for a key.
	rescan := workers[0]
	db.Exec(t, `SELECT fn_iu_route_worker_reset_cursor($1)`, rescan.Name)
	var wantWritten, wantDead, wantClaimed int
	for k, x := range expected {
		if k.worker != rescan.Name || !x.out.Claimed {
			continue
		}
		wantClaimed++
		in := x.in
		in.Route = routes[match{in.Event.Domain, in.Event.Type, in.Event.Stream}]
		d := decision.Decide(in)
		fresh := true
		for _, a := range attempts[k] {
			if a.key == d.IdempotencyKey {
				fresh = false
			}
		}
		if fresh {
			wantWritten++
			if d.DeadLetter {
				wantDead++
			}
		}
	}
	var got tally
	for {
		s := run(ctx, t, db, rescan.Name, 500)
		got.addRun(s)
		if s.Claimed == 0 && s.CaughtUp {
			break
		}
	}
	var written int
	db.QueryRow(t, `SELECT count(*) FROM iu_route_attempt WHERE worker_name = $1`, []any{rescan.Name}, &written)
	if got.claimed != wantClaimed || written != wantClaimed+wantWritten || got.dead != wantDead {
		t.Errorf("seed %d: re-scan claimed %d (want %d), attempts now %d (want %d + %d new), dead letters %d (want %d)",
			sd, got.claimed, wantClaimed, written, wantClaimed, wantWritten, got.dead, wantDead)
	}
	var dups int
	db.QueryRow(t, `SELECT count(*) FROM (SELECT 1 FROM iu_route_attempt GROUP BY idempotency_key, attempt_no HAVING count(*) > 1) d`, nil, &dups)
	if dups != 0 {
		t.Errorf("seed %d: %d duplicated (idempotency_key, attempt_no) after the re-scan", sd, dups)
	}
	t.Logf("seed %d: %d cases agree (%d claimed: %v; %d out of domain), %d gated runs; re-scan of %s: %d claimed, %d new keys (%d dead letters)",
		sd, len(expected), len(expected)-unclaimed, statusSeen, unclaimed, gatedRuns, rescan.Name, wantClaimed, wantWritten, wantDead)
}
