package retention

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule (issue 22, item 6): history stays whole under chaos. On a cluster of the test's
// own, for 15 s: two producers (1–5 events per transaction), two route workers (w, w2),
// maintenance and retention every second, a stretch without maintenance from 4 s on until
// the partitions ran out and rows landed in the default partitions (a session of the test
// burns transaction ids during it, so it does on a slow machine too), and every 150–350 ms
// one session of a random kind (producer, worker, maintenance, retention) terminated with
// pg_terminate_backend wherever it is (each reconnects). Partitions are 2,000 txids wide and
// events are kept 0 days, so partitions are dropped while all this goes on; attempts are
// kept, as the record of what the workers did. Afterwards (maintenance and the workers run
// until done): every event a producer saw committed has exactly one first attempt of each
// worker (0 missing, 0 duplicated; an event whose commit was cut off by its termination
// counts only if it is there), no idempotency key has two first attempts, the default
// partitions are empty, partitions were dropped, and every kind was terminated at least
// once. The longest producer stall is printed.
func TestChaos_HistoryUnderKillsAndRetention(t *testing.T) {
	const w = 2000
	db := privateDB(t, w)
	keepForDays(t, db, "0", "")
	db.Exec(t, `SELECT fn_iu_route_worker_register('w2')`)

	ctx, cancel := context.WithTimeout(pgtest.Ctx(t), 15*time.Second)
	defer cancel()
	kinds := map[string][]*session{
		"producer":    {newSession(t, db), newSession(t, db)},
		"worker":      {newSession(t, db), newSession(t, db)},
		"maintenance": {newSession(t, db)},
		"retention":   {newSession(t, db)},
	}
	mon := &lockMonitor{interval: 10 * time.Millisecond,
		watched: func() []int32 {
			return []int32{kinds["producer"][0].pid.Load(), kinds["producer"][1].pid.Load()}
		}}
	var (
		mu         sync.Mutex
		known      []string // ids whose commit returned
		stall      latencies
		kills      = map[string]int{}
		drops      atomic.Int64
		maxDef     atomic.Int64
		outageOver atomic.Bool
		unexpectd  []error
	)
	unexpected := func(what string, err error) {
		if err == nil || terminated(err) || ctx.Err() != nil {
			return
		}
		mu.Lock()
		unexpectd = append(unexpectd, errors.New(what+": "+err.Error()))
		mu.Unlock()
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); mon.run(ctx, db.URL) }()
	for _, p := range kinds["producer"] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := p.ensure(ctx); err != nil {
					unexpected("producer reconnect", err)
					time.Sleep(50 * time.Millisecond)
					continue
				}
				t0 := time.Now()
				ids, err := produce(ctx, p.conn, 1+rand.IntN(5))
				if err != nil {
					unexpected("producer", err)
					continue
				}
				stall.add(time.Since(t0))
				mu.Lock()
				known = append(known, ids...)
				mu.Unlock()
			}
		}()
	}
	for i, wk := range kinds["worker"] {
		name := []string{"w", "w2"}[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			every(ctx, 20*time.Millisecond, func(ctx context.Context) {
				_, err := wk.callDoc(ctx, `SELECT fn_iu_route_worker_run($1, 500)`, name)
				unexpected("worker "+name, err)
			})
		}()
	}
	// The outage must run the producers past the partitions on any machine: on a slow or
	// busy one the producers alone may not consume the two to three partition widths kept
	// ahead within it. A session of the test's own (never terminated) burns transaction ids
	// during the outage until rows reach the default partition.
	burner := db.Conn(t)
	if _, err := burner.Exec(ctx, `SET synchronous_commit = off`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	wg.Add(2)
	go func() {
		defer wg.Done()
		every(ctx, time.Second, func(ctx context.Context) {
			s := kinds["maintenance"][0]
			var inDefault int64
			if err := s.ensure(ctx); err == nil { // how many rows reached the default partition
				if err := s.conn.QueryRow(ctx, `SELECT count(*) FROM ONLY event_outbox_default`).Scan(&inDefault); err == nil && inDefault > maxDef.Load() {
					maxDef.Store(inDefault)
				}
			}
			// The outage: from 4 s on, no maintenance until the producers ran past the
			// partitions (200 rows in the default partition) or 11 s.
			if since := time.Since(start); since > 4*time.Second && since < 11*time.Second && inDefault < 200 && !outageOver.Load() {
				if inDefault == 0 {
					_, err := burner.Exec(ctx, fmt.Sprintf(`DO $$ BEGIN FOR i IN 1..%d LOOP PERFORM pg_current_xact_id(); COMMIT; END LOOP; END $$`, w))
					unexpected("burning txids during the outage", err)
				}
				return
			}
			if time.Since(start) > 4*time.Second {
				outageOver.Store(true)
			}
			_, err := s.callDoc(ctx, `SELECT fn_iu_partition_maintain()`)
			unexpected("maintenance", err)
		})
	}()
	go func() {
		defer wg.Done()
		every(ctx, time.Second, func(ctx context.Context) {
			m, err := kinds["retention"][0].callDoc(ctx, `SELECT fn_iu_retention_run(false)`)
			unexpected("retention", err)
			if d, ok := m["dropped"].([]any); ok {
				drops.Add(int64(len(d)))
			}
		})
	}()
	killer := db.Conn(t)
	names := []string{"producer", "worker", "maintenance", "retention"}
	for ctx.Err() == nil {
		time.Sleep(time.Duration(150+rand.IntN(200)) * time.Millisecond)
		kind := names[rand.IntN(len(names))]
		ss := kinds[kind]
		s := ss[rand.IntN(len(ss))]
		var ok bool
		if err := killer.QueryRow(context.Background(), `SELECT pg_terminate_backend($1)`, s.pid.Load()).Scan(&ok); err == nil && ok {
			kills[kind]++
		}
	}
	wg.Wait()
	if mon.sampleErr != nil {
		t.Fatalf("lock monitor: %v", mon.sampleErr)
	}
	for _, err := range unexpectd {
		t.Errorf("unexpected error (not a termination): %v", err)
	}

	// Settle: maintenance until the default partitions are empty, the workers until caught up.
	var settleCalls int
	for settleCalls = 1; settleCalls <= 5; settleCalls++ {
		if m := maintain(t, db); settleCalls > 1 {
			t.Logf("settling call %d: %v", settleCalls, m)
		}
		if scalar(t, db, `SELECT (SELECT count(*) FROM ONLY event_outbox_default) + (SELECT count(*) FROM ONLY iu_route_attempt_default)`) == 0 {
			break
		}
	}
	runUntilCaughtUp(t, db, "w")
	runUntilCaughtUp(t, db, "w2")
	maintain(t, db)

	db.Exec(t, `CREATE TABLE chaos_known (id uuid PRIMARY KEY)`)
	rows := make([][]any, len(known))
	for i, id := range known {
		rows[i] = []any{id}
	}
	c := db.Conn(t)
	if _, err := c.CopyFrom(pgtest.Ctx(t), pgx.Identifier{"chaos_known"}, []string{"id"}, pgx.CopyFromRows(rows)); err != nil {
		t.Fatal(err)
	}
	var missing, duplicated, dupKeys, defaults, ledger, events, attempts int
	db.QueryRow(t, `
		WITH a AS (SELECT event_ref, count(*) FILTER (WHERE worker_name = 'w') AS w1, count(*) FILTER (WHERE worker_name = 'w2') AS w2
		             FROM iu_route_attempt WHERE attempt_no = 1 GROUP BY event_ref)
		SELECT count(*) FILTER (WHERE coalesce(a.w1, 0) = 0 OR coalesce(a.w2, 0) = 0),
		       count(*) FILTER (WHERE a.w1 > 1 OR a.w2 > 1)
		  FROM chaos_known k LEFT JOIN a ON a.event_ref = k.id`, nil, &missing, &duplicated)
	db.QueryRow(t, `SELECT count(*) FROM (SELECT 1 FROM iu_route_attempt WHERE attempt_no = 1 GROUP BY idempotency_key HAVING count(*) > 1) d`, nil, &dupKeys)
	db.QueryRow(t, `SELECT (SELECT count(*) FROM ONLY event_outbox_default) + (SELECT count(*) FROM ONLY iu_route_attempt_default)`, nil, &defaults)
	db.QueryRow(t, `SELECT count(*) FROM iu_retention_ledger`, nil, &ledger)
	db.QueryRow(t, `SELECT count(*) FROM event_outbox`, nil, &events)
	db.QueryRow(t, `SELECT count(*) FROM iu_route_attempt`, nil, &attempts)
	longest, behind, what := mon.result()
	t.Logf("15 s: %d events seen committed (%d still in the outbox), %d attempts; terminations %v; %d partitions dropped (%d ledger rows); up to %d rows in event_outbox_default when maintenance came back, empty after %d settling call(s)",
		len(known), events, attempts, kills, drops.Load(), ledger, maxDef.Load(), settleCalls)
	t.Logf("producer transactions: %s; longest producer lock wait seen: %v (%s, behind pids %v)", stall.summary(), longest.Round(time.Millisecond), what, behind)
	t.Logf("missing %d, duplicated %d, idempotency keys with two first attempts %d, rows left in the default partitions %d", missing, duplicated, dupKeys, defaults)
	if missing != 0 || duplicated != 0 || dupKeys != 0 {
		t.Errorf("events missing %d, duplicated %d, keys twice %d: want 0", missing, duplicated, dupKeys)
	}
	if defaults != 0 {
		t.Errorf("%d rows left in the default partitions: want them drained", defaults)
	}
	if ledger == 0 || maxDef.Load() == 0 {
		t.Errorf("premise: partitions dropped (%d) and rows in the default partitions during the outage (%d)", ledger, maxDef.Load())
	}
	for _, k := range names {
		if kills[k] == 0 {
			t.Errorf("no %s session was terminated: the run proves less than it says", k)
		}
	}
}

// produce inserts n events in one transaction and returns their ids once it committed.
func produce(ctx context.Context, c *pgx.Conn, n int) ([]string, error) {
	tx, err := c.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.Background()) //nolint:errcheck
	rows, err := tx.Query(ctx, `INSERT INTO event_outbox (event_domain, event_type, event_stream)
	                            SELECT 'iu', 'dry', 's' FROM generate_series(1, $1::int) RETURNING id::text`, n)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	return ids, nil
}
