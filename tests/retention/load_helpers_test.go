package retention

// Helpers of the load tests (stall, catch-up, chaos): a cluster of the test's own, sessions
// that loop one kind of work until the test stops them, and a monitor of lock waits.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iu-core/event-worker/internal/pgtest"
)

// privateDB starts a PostgreSQL cluster of the test's own (the local server binaries),
// and returns a database on it set up like setup, with partitions w txids wide. What a load
// test measures there is its own: no other test consumes its transaction ids, holds its
// xmin horizon or takes its locks. The cluster is stopped when the test ends.
func privateDB(t *testing.T, w int) *pgtest.DB {
	t.Helper()
	return setupOnWidth(t, privateHarness(t).NewDBOn(t, true), w)
}

// privateHarness starts a cluster of the test's own, as privateDB does, and returns its
// harness (for an empty database, or one installed another way). Transaction ids are
// cluster-wide: a test that steers them toward a partition's end needs this, since on the
// shared cluster every other test's transactions move them too.
func privateHarness(t *testing.T) *pgtest.Harness {
	t.Helper()
	ctx := pgtest.Ctx(t)
	srv, err := pgtest.StartLocalWith(ctx, "", pgtest.LocalOptions{Settings: []string{"max_connections=60", "deadlock_timeout=1s"}})
	if err != nil {
		pgtest.Unavailable(t, "a private PostgreSQL cluster (local server binaries): %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop(context.Background()) })
	h, err := pgtest.NewHarness(ctx, pgtest.Options{SkipContainer: true,
		Env: func(k string) string {
			if k == "TEST_DATABASE_URL" {
				return srv.AdminURL
			}
			return ""
		}})
	if err != nil {
		t.Fatalf("harness on the private cluster: %v", err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}

// session is one connection a load goroutine works on, with its backend pid. A session
// whose backend was terminated reconnects on its next call (the chaos test's kills).
type session struct {
	url  string
	conn *pgx.Conn
	pid  atomic.Int32
}

func newSession(t *testing.T, db *pgtest.DB) *session {
	t.Helper()
	s := &session{url: db.URL}
	if err := s.connect(pgtest.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return s
}

func (s *session) connect(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(cctx, s.url)
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	s.conn = c
	s.pid.Store(int32(c.PgConn().PID()))
	return nil
}

// close ends the session (a transaction it left open rolls back).
func (s *session) close() {
	if s.conn != nil {
		s.conn.Close(context.Background())
	}
}

// ensure reconnects a session whose connection is closed (terminated by the server).
func (s *session) ensure(ctx context.Context) error {
	if s.conn != nil && !s.conn.IsClosed() {
		return nil
	}
	if s.conn != nil {
		s.conn.Close(context.Background())
	}
	return s.connect(ctx)
}

// callDoc runs a statement returning one jsonb document on the session.
func (s *session) callDoc(ctx context.Context, sql string, args ...any) (map[string]any, error) {
	if err := s.ensure(ctx); err != nil {
		return nil, err
	}
	var raw []byte
	if err := s.conn.QueryRow(ctx, sql, args...).Scan(&raw); err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %w: %s", sql, err, raw)
	}
	return m, nil
}

// terminated says whether err is what a session sees when its backend was terminated (or
// its connection closed under it): the chaos test's doing, not a failure.
func terminated(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "57P01" // admin_shutdown: pg_terminate_backend
	}
	return err != nil && (pgconn.SafeToRetry(err) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) || isClosedConn(err))
}

func isClosedConn(err error) bool {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	s := err.Error()
	for _, frag := range []string{"conn closed", "unexpected EOF", "broken pipe", "connection reset", "failed to deserialize", "receive message failed", "write failed"} {
		if strings.Contains(s, frag) {
			return true
		}
	}
	return false
}

// latencies keeps the latencies of one kind of statement: how many, the longest and when.
type latencies struct {
	mu    sync.Mutex
	n     int
	all   []time.Duration
	max   time.Duration
	maxAt time.Time
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	l.all = append(l.all, d)
	if d > l.max {
		l.max, l.maxAt = d, time.Now()
	}
}

// summary is "n=…, p50 …, p99 …, max …".
func (l *latencies) summary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		return "n=0"
	}
	s := append([]time.Duration(nil), l.all...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	q := func(f float64) time.Duration { return s[int(f*float64(len(s)-1))] }
	return fmt.Sprintf("n=%d p50 %v p99 %v max %v", l.n, q(0.5).Round(10*time.Microsecond),
		q(0.99).Round(10*time.Microsecond), l.max.Round(10*time.Microsecond))
}

// lockMonitor samples pg_locks every few milliseconds for lock waits of the watched
// sessions (producers, workers) and keeps the longest wait seen and who it waited behind
// (pg_blocking_pids: holders and requests queued ahead). It sees a wait at most one
// interval late, so the figure is a lower bound close to the real wait.
type lockMonitor struct {
	mu        sync.Mutex
	longest   time.Duration
	behind    []int32
	what      string
	watched   func() []int32
	interval  time.Duration
	samples   int
	sampleErr error
}

func (m *lockMonitor) run(ctx context.Context, url string) {
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		m.sampleErr = err
		return
	}
	defer c.Close(context.Background())
	tick := time.NewTicker(m.interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rows, err := c.Query(ctx, `
			SELECT l.pid, (extract(epoch FROM clock_timestamp() - l.waitstart) * 1e6)::bigint,
			       pg_blocking_pids(l.pid), coalesce(l.relation::regclass::text, l.locktype)
			  FROM pg_locks l
			 WHERE NOT l.granted AND l.waitstart IS NOT NULL AND l.pid = ANY ($1::int4[])`, m.watched())
		if err != nil {
			if ctx.Err() == nil {
				m.sampleErr = err
			}
			return
		}
		m.mu.Lock()
		m.samples++
		for rows.Next() {
			var pid int32
			var us int64
			var behind []int32
			var rel string
			if err := rows.Scan(&pid, &us, &behind, &rel); err != nil {
				continue
			}
			if d := time.Duration(us) * time.Microsecond; d > m.longest {
				m.longest, m.behind, m.what = d, behind, fmt.Sprintf("pid %d on %s", pid, rel)
			}
		}
		m.mu.Unlock()
		rows.Close()
	}
}

func (m *lockMonitor) result() (time.Duration, []int32, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.longest, m.behind, m.what
}

// every runs f every d until ctx ends (f's own duration included in the cadence).
func every(ctx context.Context, d time.Duration, f func(context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		f(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

const insertEvent = `INSERT INTO event_outbox (event_domain, event_type, event_stream) VALUES ('iu', 'dry', 's')`
