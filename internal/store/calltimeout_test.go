package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
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

// blackhole relays TCP to target until frozen; then it silently drops every byte both
// ways and keeps the sockets open: a half-open connection, as after a network partition.
type blackhole struct {
	ln     net.Listener
	frozen atomic.Bool
	mu     sync.Mutex
	conns  []net.Conn
}

func newBlackhole(t *testing.T, network, target string) *blackhole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackhole{ln: ln}
	t.Cleanup(b.close)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial(network, target)
			if err != nil {
				c.Close()
				continue
			}
			b.mu.Lock()
			b.conns = append(b.conns, c, u)
			b.mu.Unlock()
			go b.pipe(u, c)
			go b.pipe(c, u)
		}
	}()
	return b
}

// close drops the relay and every relayed connection (the client then sees them reset).
func (b *blackhole) close() {
	b.ln.Close()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.conns {
		c.Close()
	}
}

func (b *blackhole) pipe(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !b.frozen.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Rule: every store call has a client-side deadline: when the connection stops answering
// (half-open TCP), the call fails after CallTimeout instead of hanging the runner.
func TestCallTimeoutOnHalfOpenConnection(t *testing.T) {
	db := pgtest.NewDB(t)
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	cc := cfg.ConnConfig
	network, target := "tcp", net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))
	if strings.HasPrefix(cc.Host, "/") {
		network, target = "unix", filepath.Join(cc.Host, fmt.Sprintf(".s.PGSQL.%d", cc.Port))
	}
	bh := newBlackhole(t, network, target)
	addr := bh.ln.Addr().(*net.TCPAddr)
	cc.Host, cc.Port, cc.Fallbacks = "127.0.0.1", uint16(addr.Port), nil
	config.Apply(cfg.ConnConfig, 0, 5*time.Second) // no statement timeout: only the client deadline can help
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	t.Cleanup(bh.close) // before pool.Close, which would otherwise wait on the frozen sessions
	st := New(pool)
	st.CallTimeout = 700 * time.Millisecond
	if err := st.Ping(context.Background()); err != nil {
		t.Fatalf("ping through the relay: %v", err)
	}

	bh.frozen.Store(true)
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := st.StaleCheck(context.Background())
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("call on a dead connection returned %v, want a deadline error", err)
		}
		if took := time.Since(start); took < 600*time.Millisecond {
			t.Fatalf("failed after %s, before the call timeout", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call hung on a half-open connection: no client-side deadline")
	}
}
