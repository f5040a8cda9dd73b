package service

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/iu-core/event-worker/internal/config"
	"github.com/iu-core/event-worker/internal/pgtest"
	"github.com/iu-core/event-worker/internal/store"
)

// The tests of this package that need a database get a real one (internal/pgtest); the
// server starts only when one of them runs.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// runnerPool opens a pool on url configured as the runner configures its own (application
// name, statement timeout, connect timeout, cancel requests), closed when t ends.
func runnerPool(t *testing.T, url string, connectTimeout time.Duration) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	config.Apply(cfg.ConnConfig, 30*time.Second, connectTimeout)
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// realStore is the runner's store on pool, with a short call deadline so a test never
// waits long on a server that went away.
func realStore(pool *pgxpool.Pool) *store.Store {
	st := store.New(pool)
	st.CallTimeout = 5 * time.Second
	return st
}

// running is a Service started by startService; stop ends it and waits.
type running struct {
	*Service
	cancel context.CancelFunc
	done   chan struct{} // closed when Run returned
	err    error         // what Run returned
}

func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
		if r.err != nil {
			t.Fatal(r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the service did not stop within 30s")
	}
}

// startService runs s until the test ends (or stop) and waits until it serves HTTP.
func startService(t *testing.T, s *Service) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Service: s, cancel: cancel, done: make(chan struct{})}
	go func() { r.err = s.Run(ctx); close(r.done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			t.Error("the service did not stop within 30s")
		}
	})
	eventually(t, "serving HTTP", func() bool { return s.Addr() != "" })
	return r
}

// logSink is a JSON log the service's goroutines and the test share.
type logSink struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logSink) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelInfo}))
}
