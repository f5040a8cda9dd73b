package service

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iu-core/event-worker/internal/metrics"
	"github.com/iu-core/event-worker/internal/pgtest"
)

// Rule: a stranger cannot hold the metrics port with slow requests. 200 connections that
// send their headers and then trickle a request body (Content-Length 1000, one byte every
// 250 ms, so a body would take over four minutes) are each cut off by the read timeout,
// at most MaxConns of them are ever served at once (the rest wait in the kernel's
// queue), and the port answers an operator again as soon as the flood is gone. (The
// security review's reproduction: 200 such connections were all still held after 15 s.)
func TestHTTPFloodOfTricklingBodiesIsCutOff(t *testing.T) {
	db := pgtest.NewDB(t)
	c := cfg()
	c.HTTP = HTTPLimits{ReadHeaderTimeout: 300 * time.Millisecond, ReadTimeout: time.Second,
		WriteTimeout: time.Second, IdleTimeout: time.Second, MaxConns: 50}
	r := startService(t, New(c, realStore(runnerPool(t, db.URL, 5*time.Second)), nil, quiet(), metrics.New()))

	const conns = 200
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // bounds every trickle
	defer cancel()
	var closed atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for i := range conns {
		conn, err := net.DialTimeout("tcp", r.Addr(), 5*time.Second)
		if err != nil {
			t.Fatalf("dialing connection %d: %v", i, err)
		}
		defer conn.Close()
		if _, err := fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: runner\r\nContent-Length: 1000\r\n\r\n"); err != nil {
			t.Fatalf("connection %d: sending headers: %v", i, err)
		}
		wg.Add(2)
		go func() { // the trickle: one byte every 250 ms until the server hangs up
			defer wg.Done()
			tk := time.NewTicker(250 * time.Millisecond)
			defer tk.Stop()
			for range 1000 {
				select {
				case <-ctx.Done():
					return
				case <-tk.C:
				}
				_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
				if _, err := conn.Write([]byte{'x'}); err != nil {
					return
				}
			}
		}()
		go func() { // the server hanging up: EOF or a reset after whatever it answered
			defer wg.Done()
			_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			_, _ = io.Copy(io.Discard, conn)
			if ctx.Err() == nil {
				closed.Add(1)
			}
		}()
	}
	// Four waves of 50 connections, one read timeout each: well inside 15 s.
	deadline := time.Now().Add(15 * time.Second)
	for closed.Load() < conns && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := closed.Load(); n < conns {
		t.Fatalf("%d of %d trickling connections still held after 15s: the server never cuts a slow request off", conns-n, conns)
	}
	if peak, limit := r.http.Load().peak.Load(), int64(c.HTTP.MaxConns); peak > limit {
		t.Fatalf("%d connections were served at once, the cap is %d", peak, limit)
	}
	client := http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get("http://" + r.Addr() + "/healthz")
	if err != nil {
		t.Fatalf("/healthz after the flood: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz after the flood: %d", resp.StatusCode)
	}
}

// Rule: the connection cap never blocks shutdown: Close ends an Accept that waits for a
// free slot, and a connection gives its slot back once however often it is closed.
func TestLimitListenerCloseAndRelease(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := newLimitListener(tcp, 1)
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	first, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	_ = first.Close()
	_ = first.Close() // a second Close must not free a second slot
	if n := len(ln.sem); n != 0 {
		t.Fatalf("%d slots held after the only connection closed", n)
	}
	second, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	held, err := ln.Accept() // takes the one slot
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	accepted := make(chan error, 1)
	go func() { _, err := ln.Accept(); accepted <- err }() // waits for a slot
	_ = ln.Close()
	select {
	case err := <-accepted:
		if err == nil {
			t.Fatal("Accept returned a connection after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end an Accept waiting for a slot")
	}
}

// pingCounter is the runner's real store, counting the /readyz pings that reach it.
type pingCounter struct {
	DB
	pings atomic.Int64
}

func (p *pingCounter) Ping(ctx context.Context) error {
	p.pings.Add(1)
	return p.DB.Ping(ctx)
}

// Rule: /readyz cannot be used to hold the runner's database pool: concurrent requests
// share one ping, and a result answers for a second. 64 simultaneous /readyz requests (the
// connection cap) all answer 200 with at most one ping per second of the flood, where each
// used to take a pool connection (4 by default) for up to 2 s while the worker passes
// waited for one.
func TestReadyzFloodSharesOnePing(t *testing.T) {
	db := pgtest.NewDB(t)
	store := &pingCounter{DB: realStore(runnerPool(t, db.URL, 5*time.Second))}
	r := startService(t, New(cfg(), store, nil, quiet(), metrics.New()))
	const requests = 64
	start := time.Now()
	var wg sync.WaitGroup
	codes := make(chan int, requests)
	for range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := http.Client{Timeout: 10 * time.Second}
			resp, err := client.Get("http://" + r.Addr() + "/readyz")
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		}()
	}
	wg.Wait()
	close(codes)
	elapsed := time.Since(start)
	for c := range codes {
		if c != http.StatusOK {
			t.Fatalf("a /readyz answered %d", c)
		}
	}
	limit := 1 + int64(elapsed/readyFor)
	if n := store.pings.Load(); n > limit {
		t.Fatalf("%d concurrent /readyz requests made %d database pings in %s, want at most %d", requests, n, elapsed.Round(time.Millisecond), limit)
	}
}
