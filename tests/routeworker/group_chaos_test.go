package routeworker

// Groups under load: members run by concurrent sessions and by psql processes, killed
// with pg_terminate_backend and SIGKILL while they route, one member's runner gone for
// good, a member added and another removed while all of this goes on.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// gsession is one connection a load goroutine works on, with its backend pid; after its
// backend is terminated it reconnects on its next call.
type gsession struct {
	url  string
	conn *pgx.Conn
	pid  atomic.Int32
}

func (s *gsession) ensure(ctx context.Context) error {
	if s.conn != nil && !s.conn.IsClosed() {
		return nil
	}
	if s.conn != nil {
		s.conn.Close(context.Background())
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(cctx, s.url)
	if err != nil {
		return err
	}
	s.conn = c
	s.pid.Store(int32(c.PgConn().PID()))
	return nil
}

func (s *gsession) close() {
	if s.conn != nil {
		s.conn.Close(context.Background())
	}
}

// killedErr says whether err is what a session sees when its backend was terminated or its
// connection closed under it (or the test's context ended): the test's doing.
func killedErr(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "57P01"
	}
	if err == nil {
		return false
	}
	if pgconn.SafeToRetry(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	for _, frag := range []string{"conn closed", "unexpected EOF", "broken pipe", "connection reset", "failed to deserialize", "receive message failed", "write failed"} {
		if strings.Contains(err.Error(), frag) {
			return true
		}
	}
	return false
}

// groupLoad is what the load's goroutines count.
type groupLoad struct {
	mu          sync.Mutex
	unexpected  []string
	already     atomic.Int64 // already_attempted over every committed run: 0 when no event is routed twice
	runs        atomic.Int64
	tookOver    atomic.Int64
	settled     atomic.Int64
	termKills   atomic.Int64 // pg_terminate_backend of a member session in a run
	procKills   atomic.Int64 // SIGKILL of a psql process running a member
	procKillRun atomic.Int64 // ... while its backend was in a run
}

func (l *groupLoad) fail(format string, args ...any) {
	l.mu.Lock()
	l.unexpected = append(l.unexpected, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

// count adds a committed run's summary.
func (l *groupLoad) count(raw []byte) {
	var s struct {
		AlreadyAttempted int64 `json:"already_attempted"`
		TookOver         bool  `json:"took_over"`
		Settled          bool  `json:"rebalance_settled"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		l.fail("summary %s: %v", raw, err)
		return
	}
	l.runs.Add(1)
	l.already.Add(s.AlreadyAttempted)
	if s.TookOver {
		l.tookOver.Add(1)
	}
	if s.Settled {
		l.settled.Add(1)
	}
}

// runMember runs one member in a loop on its own session until ctx ends or the member is
// gone (removed: P0002). A terminated session reconnects.
func runMember(ctx context.Context, l *groupLoad, s *gsession, member string, batch int) {
	for ctx.Err() == nil {
		if err := s.ensure(ctx); err != nil {
			if !killedErr(err) {
				l.fail("%s: connecting: %v", member, err)
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		var raw []byte
		err := s.conn.QueryRow(ctx, `SELECT fn_iu_route_worker_run($1, $2)`, member, batch).Scan(&raw)
		var pe *pgconn.PgError
		switch {
		case err == nil:
			l.count(raw)
		case errors.As(err, &pe) && pe.Code == "P0002":
			return // removed from the group
		case killedErr(err):
		default:
			l.fail("%s: %v", member, err)
		}
		time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
	}
}

// psqlMember runs one member from psql processes (\watch), each killed with SIGKILL after
// 100-300 ms and replaced, until ctx ends. The server notices a dead client when it next
// talks to it: a run in progress rolls back.
func psqlMember(ctx context.Context, l *groupLoad, url, member string, admin *pgxpool.Pool) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		l.fail("psql: %v", err)
		return
	}
	app := "grp-psql-" + member
	for ctx.Err() == nil {
		cmd := exec.Command(psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url)
		cmd.Env = append(os.Environ(), "PGAPPNAME="+app)
		cmd.Stdin = strings.NewReader(fmt.Sprintf("SELECT fn_iu_route_worker_run('%s', 100) \\watch 0.002\n", member))
		cmd.Stdout, cmd.Stderr = nil, nil
		if err := cmd.Start(); err != nil {
			l.fail("starting psql: %v", err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(100+rand.IntN(200)) * time.Millisecond):
		}
		// Kill it in the middle of a run when one comes within ~100 polls.
		var active bool
		for i := 0; i < 100 && !active && ctx.Err() == nil; i++ {
			_ = admin.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND state = 'active')`, app).Scan(&active)
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		l.procKills.Add(1)
		if active {
			l.procKillRun.Add(1)
		}
	}
}

// Rule: a group routes each event of its domain exactly once, under the group's name, and
// one stream's events in the order they were committed, while its members are killed in
// the middle of runs and the group is rebalanced. For about 12 s: three producers commit
// events of 30 streams (1-3 events of one stream per transaction, a sequence number per
// stream in the payload); members g-1 and g-2 run from sessions, each terminated with
// pg_terminate_backend in the middle of a run every 100-250 ms (and reconnecting); g-3
// joins at 2 s and runs from psql processes killed with SIGKILL every 100-300 ms; g-2's
// runner stops for good at 4 s (its buckets must be taken over); g-1 is removed at 6 s.
// Afterwards (the remaining members run until caught up): every event has exactly one
// attempt of group g; no committed run met an attempt that already existed (no event was
// routed twice, already_attempted 0); in every stream the attempts were written in the
// events' commit order (txid, then id: the order one worker reads them in) and no sequence
// number is missing; both rebalances settled (generation + 2, members g-2 and g-3); runs
// took over other members; and kills of both kinds hit members in the middle of runs.
func TestGroup_ExactlyOnceInStreamOrderUnderKillsAndRebalance(t *testing.T) {
	t.Parallel()
	db, _ := setup(t)
	db.Exec(t, `SELECT fn_iu_route_worker_register_member('g', 'g-1', 'iu', 1)`)
	db.Exec(t, `SELECT fn_iu_route_worker_register_member('g', 'g-2')`)
	var gen0 int
	db.QueryRow(t, `SELECT generation FROM iu_route_group WHERE group_name = 'g'`, nil, &gen0)

	ctx, cancel := context.WithTimeout(pgtest.Ctx(t), 12*time.Second)
	defer cancel()
	l := &groupLoad{}
	admin := db.Pool // shared by goroutines: a pool, not one connection
	var wg sync.WaitGroup

	// Producers: each owns 10 streams and a sequence per stream.
	for p := 0; p < 3; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &gsession{url: db.URL}
			defer s.close()
			seq := make([]int, 10)
			for ctx.Err() == nil {
				if err := s.ensure(ctx); err != nil {
					continue
				}
				k, n := rand.IntN(10), 1+rand.IntN(3)
				_, err := s.conn.Exec(ctx, `
					INSERT INTO event_outbox (event_domain, event_type, event_stream, safe_payload)
					SELECT 'iu', 'dry', $1, jsonb_build_object('seq', $2::int + g) FROM generate_series(1, $3::int) g`,
					fmt.Sprintf("p%d-%d", p, k), seq[k], n)
				if err == nil {
					seq[k] += n
				} else if !killedErr(err) {
					l.fail("producer: %v", err)
				}
				// About 1,000 events a second in all: a rate the members keep up with, so
				// each hand-over settles while the load goes on.
				time.Sleep(time.Duration(4+rand.IntN(4)) * time.Millisecond)
			}
		}()
	}

	// g-1 and g-2 from sessions; g-2's runner stops for good at 4 s.
	sessions := map[string]*gsession{}
	for _, m := range []string{"g-1", "g-2"} {
		s := &gsession{url: db.URL}
		sessions[m] = s
		t.Cleanup(s.close)
		mctx := ctx
		if m == "g-2" {
			var c context.CancelFunc
			mctx, c = context.WithTimeout(ctx, 4*time.Second)
			defer c()
		}
		wg.Add(1)
		go func() { defer wg.Done(); runMember(mctx, l, s, m, 100) }()
	}
	// The killer: a member session in a run, terminated every 100-250 ms.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(100+rand.IntN(150)) * time.Millisecond):
			}
			s := sessions[[]string{"g-1", "g-2"}[rand.IntN(2)]]
			var killed bool
			if err := admin.QueryRow(context.Background(), `
				SELECT coalesce(bool_or(pg_terminate_backend(pid)), false) FROM pg_stat_activity
				 WHERE pid = $1 AND state = 'active' AND query LIKE '%fn_iu_route_worker_run%'`, s.pid.Load()).Scan(&killed); err == nil && killed {
				l.termKills.Add(1)
			}
		}
	}()

	// The rebalances: g-3 joins at 2 s (run from psql processes), g-1 leaves at 6 s.
	t0 := time.Now()
	diagConn := db.Conn(t) // only the diagnosis of a change that waits uses it
	change := func(sql string) {
		var last error
		for i := 0; ctx.Err() == nil && i < 200; i++ {
			diag := time.AfterFunc(3*time.Second, func() {
				rows, err := diagConn.Query(context.Background(), `
					SELECT pid, state, coalesce(wait_event_type || ':' || wait_event, ''), pg_blocking_pids(pid)::text, left(query, 100)
					  FROM pg_stat_activity WHERE datname = current_database() AND state <> 'idle' AND pid <> pg_backend_pid()`)
				if err != nil {
					t.Logf("diag: %v", err)
					return
				}
				defer rows.Close()
				for rows.Next() {
					var pid int
					var st, w, b, q string
					_ = rows.Scan(&pid, &st, &w, &b, &q)
					t.Logf("after 3 s: pid %d %s %s blocked by %s: %s", pid, st, w, b, q)
				}
			})
			_, err := db.Pool.Exec(ctx, sql)
			diag.Stop()
			var pe *pgconn.PgError
			if err == nil {
				t.Logf("%s accepted at %v after %d refusals", sql, time.Since(t0).Round(time.Millisecond), i)
				return
			}
			if !errors.As(err, &pe) || (pe.Code != "55000" && pe.Code != "55P03") {
				l.fail("%s: %v", sql, err)
				return
			}
			last = err
			time.Sleep(20 * time.Millisecond) // the previous hand-over has not settled yet
		}
		var h []byte
		_ = admin.QueryRow(context.Background(), `SELECT fn_iu_route_group_health('g')`).Scan(&h)
		l.fail("%s: never accepted (last: %v); group: %s", sql, last, h)
	}
	time.Sleep(2 * time.Second)
	change(`SELECT fn_iu_route_worker_register_member('g', 'g-3')`)
	wg.Add(1)
	go func() { defer wg.Done(); psqlMember(ctx, l, db.URL, "g-3", admin) }()
	time.Sleep(4 * time.Second)
	change(`SELECT fn_iu_route_worker_remove_member('g', 'g-1')`)
	wg.Wait()
	for _, u := range l.unexpected {
		t.Errorf("unexpected: %s", u)
	}

	// Drain: the members left run until caught up and the group is settled.
	var left, pending int
	for round := 0; ; round++ {
		if round > 50 {
			// Events that stay without an attempt after every member caught up were lost
			// (e.g. a hand-over that settled before the old owner reached the boundary).
			t.Fatalf("the group never drained: %d events without an attempt of g, %d hand-overs pending", left, pending)
		}
		for _, m := range []string{"g-2", "g-3"} {
			for i := 0; i < 200; i++ {
				var raw []byte
				db.QueryRow(t, `SELECT fn_iu_route_worker_run($1, 1000)`, []any{m}, &raw)
				l.count(raw)
				var s struct {
					CaughtUp bool `json:"caught_up"`
					Waiting  bool `json:"waiting_for_rebalance"`
				}
				_ = json.Unmarshal(raw, &s)
				if s.CaughtUp && !s.Waiting {
					break
				}
			}
		}
		db.QueryRow(t, `SELECT (SELECT count(*) FROM event_outbox e WHERE e.event_domain = 'iu'
		                          AND NOT EXISTS (SELECT 1 FROM iu_route_attempt a WHERE a.event_ref = e.id AND a.worker_name = 'g')),
		                       (SELECT count(*) FROM iu_route_group WHERE boundary_snapshot IS NOT NULL)`, nil, &left, &pending)
		if left == 0 && pending == 0 {
			break
		}
	}

	events := requireGroupExactlyOnce(t, db, "g")
	// A stream's events are committed by one producer session, one transaction after the
	// other: their commit order is (txid, then id within a transaction, as a worker reads
	// one). The group must write a stream's attempts (ids rising) in exactly that order, and
	// route every sequence number of it (1..max, none missing).
	var disorder, gaps, streams int
	var sample []string
	db.QueryRow(t, `
		WITH a AS (SELECT e.event_stream, (e.safe_payload->>'seq')::int AS seq,
		                  row_number() OVER (PARTITION BY e.event_stream ORDER BY a.id) AS by_attempt,
		                  row_number() OVER (PARTITION BY e.event_stream ORDER BY e.txid, e.id) AS by_commit
		             FROM iu_route_attempt a JOIN event_outbox e ON e.id = a.event_ref
		            WHERE a.worker_name = 'g' AND e.event_domain = 'iu'),
		     s AS (SELECT event_stream, count(*) AS n, min(seq) AS lo, max(seq) AS hi FROM a GROUP BY 1)
		SELECT (SELECT count(*) FROM a WHERE by_attempt <> by_commit),
		       (SELECT count(*) FROM s WHERE lo <> 1 OR hi <> n),
		       (SELECT count(*) FROM s),
		       coalesce((SELECT (array_agg(event_stream || ': attempt ' || by_attempt || ' is commit ' || by_commit))[1:5]
		                   FROM a WHERE by_attempt <> by_commit), '{}')`, nil, &disorder, &gaps, &streams, &sample)
	var gen int
	var members []string
	db.QueryRow(t, `SELECT g.generation, (SELECT array_agg(c.worker_name ORDER BY c.worker_name) FROM iu_route_worker_cursor c WHERE c.group_name = 'g')
	                  FROM iu_route_group g WHERE g.group_name = 'g'`, nil, &gen, &members)
	t.Logf("%d events in %d streams; %d committed runs (%d took over a member, %d settled a hand-over); kills: %d pg_terminate_backend in a run, %d SIGKILL of psql (%d in a run); generation %d -> %d, members %v",
		events, streams, l.runs.Load(), l.tookOver.Load(), l.settled.Load(), l.termKills.Load(), l.procKills.Load(), l.procKillRun.Load(), gen0, gen, members)
	if l.already.Load() != 0 {
		t.Errorf("committed runs met %d attempts that existed: an event was routed twice", l.already.Load())
	}
	if disorder != 0 || gaps != 0 {
		t.Errorf("stream order broken: %d attempts out of commit order (e.g. %v); %d streams missing sequence numbers", disorder, sample, gaps)
	}
	if gen != gen0+2 || strings.Join(members, ",") != "g-2,g-3" {
		t.Errorf("want both hand-overs settled (generation %d) and members g-2,g-3; got generation %d, members %v", gen0+2, gen, members)
	}
	if l.tookOver.Load() == 0 {
		t.Errorf("no run took over a member (g-2's runner stopped at 4 s)")
	}
	if l.termKills.Load() < 3 || l.procKillRun.Load() < 1 || events < 1000 {
		t.Errorf("too little happened: %d terminations in a run, %d process kills in a run, %d events", l.termKills.Load(), l.procKillRun.Load(), events)
	}
}
