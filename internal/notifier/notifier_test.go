package notifier

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/iu-core/event-worker/internal/config"
	"github.com/iu-core/event-worker/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s: not within 10s", what)
}

// Rule: the LISTEN session is hijacked from the pool (the pool no longer counts it), a
// notification wakes the caller, a terminated listener is re-established (a "reconnect"
// wake-up, so nothing sent meanwhile waits), and the NOTIFY round trip keeps passing.
func TestListenWakeReconnect(t *testing.T) {
	db := pgtest.NewDB(t)
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	config.Apply(cfg.ConnConfig, 30*time.Second, 5*time.Second)
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	var notifies, reconnects atomic.Int64
	var up atomic.Bool
	n := New(pool, Config{Channels: []string{"queue_wake_iu"}, CheckInterval: 50 * time.Millisecond, CheckTimeout: time.Second},
		slog.New(slog.NewTextHandler(io.Discard, nil)), Hooks{
			Wake: func(src string) {
				if src == SourceNotify {
					notifies.Add(1)
				}
			},
			State:     func(u bool) { up.Store(u) },
			Reconnect: func() { reconnects.Add(1) },
		})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()

	eventually(t, "listener up", func() bool { return up.Load() && n.Up() })
	if st := pool.Stat(); st.TotalConns() > 1 {
		// the hijacked session is not the pool's any more; at most the checker's connection is
		t.Fatalf("pool holds %d connections: the LISTEN session was not hijacked", st.TotalConns())
	}
	db.Exec(t, `SELECT pg_notify('queue_wake_iu', '{"layer":"event"}')`)
	eventually(t, "notification woke us", func() bool { return notifies.Load() == 1 })
	base := n.RoundTrips()
	eventually(t, "three NOTIFY round trips acknowledged", func() bool { return n.RoundTrips() >= base+3 })
	if !n.Up() || reconnects.Load() != 0 {
		t.Fatalf("round trips failed: up=%v reconnects=%d", n.Up(), reconnects.Load())
	}

	db.Exec(t, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	             WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`)
	eventually(t, "reconnected", func() bool { return reconnects.Load() == 1 && n.Up() })
	db.Exec(t, `SELECT pg_notify('queue_wake_iu', '{"layer":"event"}')`)
	eventually(t, "notification after the reconnect", func() bool { return notifies.Load() == 2 })

	cancel()
	<-done
	if n.Up() {
		t.Fatal("still up after stop")
	}
}

// lossyConn is a client connection whose incoming bytes can be lost on purpose: while
// deaf, everything the server sends is read and thrown away, as on a network path that
// silently stopped delivering (the session looks open; nothing arrives).
type lossyConn struct {
	net.Conn
	deaf atomic.Bool
}

func (c *lossyConn) Read(p []byte) (int, error) {
	for {
		n, err := c.Conn.Read(p)
		if !c.deaf.Load() || err != nil {
			return n, err
		}
	}
}

// lossyDialer dials through pgx's own dialer and keeps every connection, in dial order.
type lossyDialer struct {
	mu    sync.Mutex
	conns []*lossyConn
}

func (d *lossyDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{KeepAlive: 5 * time.Minute}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	lc := &lossyConn{Conn: c}
	d.mu.Lock()
	d.conns = append(d.conns, lc)
	d.mu.Unlock()
	return lc, nil
}

func (d *lossyDialer) conn(i int) *lossyConn {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.conns[i]
}

// Rule: when the round-trip answers stop arriving (the listener session no longer
// delivers), the notifier reports the listener down within the check timeout and
// reconnects; once answers flow again it is up and acknowledging round trips.
func TestLostAcknowledgementsReconnect(t *testing.T) {
	db := pgtest.NewDB(t)
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	config.Apply(cfg.ConnConfig, 30*time.Second, 5*time.Second)
	// The listener's session is the first one the pool dials (Run acquires it before the
	// round-trip checker sends anything); the test makes that one connection deaf.
	var dialer lossyDialer
	cfg.ConnConfig.DialFunc = dialer.dial
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	var reconnects, downs atomic.Int64
	var logs lockedBuffer
	n := New(pool, Config{Channels: []string{"queue_wake_iu"}, CheckInterval: 50 * time.Millisecond, CheckTimeout: 200 * time.Millisecond},
		slog.New(slog.NewTextHandler(&logs, nil)), Hooks{
			State: func(u bool) {
				if !u {
					downs.Add(1)
				}
			},
			Reconnect: func() { reconnects.Add(1) },
		})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	eventually(t, "listener up and acknowledging", func() bool { return n.Up() && n.RoundTrips() >= 1 })
	if reconnects.Load() != 0 || downs.Load() != 0 {
		t.Fatalf("already reconnected before the loss: reconnects=%d downs=%d", reconnects.Load(), downs.Load())
	}
	dialer.conn(0).deaf.Store(true) // the listener's session hears nothing from now on
	eventually(t, "lost acknowledgements reported as down", func() bool { return downs.Load() >= 1 })
	eventually(t, "reconnected after the missed round trip", func() bool { return reconnects.Load() >= 1 })
	if why := "NOTIFY round trip: no answer within"; !strings.Contains(logs.String(), why) {
		t.Fatalf("the listener went down, but not for the missed round trip (%q):\n%s", why, logs.String())
	}
	base := n.RoundTrips()
	eventually(t, "up and acknowledging again", func() bool { return n.Up() && n.RoundTrips() >= base+2 })
}

// lockedBuffer is a log sink the notifier's goroutines and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Rule: RetryNow ends a reconnect wait at once. After an outage the reconnect backoff may
// have grown to its 30 s cap; when the service sees the database answer again it calls
// RetryNow, and the listener is back without sitting out the rest of the wait.
func TestRetryNowEndsTheReconnectWait(t *testing.T) {
	db := pgtest.NewDB(t)
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	config.Apply(cfg.ConnConfig, 30*time.Second, 5*time.Second)
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var reconnects atomic.Int64
	// a backoff far longer than the test: only RetryNow can bring the listener back in time
	n := New(pool, Config{Channels: []string{"queue_wake_iu"}, MinBackoff: time.Hour, MaxBackoff: time.Hour},
		slog.New(slog.NewTextHandler(io.Discard, nil)), Hooks{Reconnect: func() { reconnects.Add(1) }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	eventually(t, "listener up", n.Up)
	db.Exec(t, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	             WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()`)
	eventually(t, "listener down", func() bool { return !n.Up() })
	n.RetryNow()
	eventually(t, "reconnected after RetryNow, inside an hour's backoff", func() bool { return n.Up() && reconnects.Load() == 1 })
}

// Rule: a burst of notifications is one wake-up: 5,000 NOTIFYs committed at once are all
// read (the Notified hook counts 5,000) and wake the caller exactly once, because the
// notifier drains what is queued behind the first one (up to its own marker) before it
// wakes; a later notification is a wake-up of its own.
func TestBurstIsOneWakeUp(t *testing.T) {
	db := pgtest.NewDB(t)
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	config.Apply(cfg.ConnConfig, 30*time.Second, 5*time.Second)
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var wakes, notified atomic.Int64
	n := New(pool, Config{Channels: []string{"queue_wake_iu"}},
		slog.New(slog.NewTextHandler(io.Discard, nil)), Hooks{
			Wake: func(src string) {
				if src == SourceNotify {
					wakes.Add(1)
				}
			},
			Notified: func(k int) { notified.Add(int64(k)) },
		})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	eventually(t, "listener up", n.Up)

	const burst = 5000
	db.Exec(t, `SELECT pg_notify('queue_wake_iu', 'flood ' || g) FROM generate_series(1, $1) g`, burst)
	eventually(t, "the whole burst read", func() bool { return notified.Load() == burst })
	if w := wakes.Load(); w != 1 {
		t.Fatalf("a burst of %d notifications woke the caller %d times, want once", burst, w)
	}
	db.Exec(t, `SELECT pg_notify('queue_wake_iu', 'later')`)
	eventually(t, "a later notification wakes again", func() bool { return wakes.Load() == 2 && notified.Load() == burst+1 })
}
