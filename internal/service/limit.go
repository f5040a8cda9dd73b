package service

import (
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// HTTPLimits bound what a client of the metrics port can hold. The port answers three
// small GET endpoints, so every request is tiny and every response is written in well
// under a second: anything slower is a client holding a connection for free. Zero fields
// take the defaults (DefaultHTTPLimits); tests shorten them to run in seconds.
type HTTPLimits struct {
	ReadHeaderTimeout time.Duration // request line and headers
	ReadTimeout       time.Duration // the whole request, body included (also bounds discarding an unread body)
	WriteTimeout      time.Duration // from the end of the headers to the end of the response
	IdleTimeout       time.Duration // a keep-alive connection waiting for its next request
	MaxConns          int           // connections served at once; more wait in the kernel's accept queue
}

// DefaultHTTPLimits are the limits of `iu-runner run`'s HTTP server. WriteTimeout leaves
// room for /readyz, whose database ping may take its full 2 s; 64 connections are far more
// than a Prometheus server, a kubelet and an operator's curl need, and few enough that a
// flood cannot take the file descriptors the database pool needs.
var DefaultHTTPLimits = HTTPLimits{
	ReadHeaderTimeout: 5 * time.Second,
	ReadTimeout:       10 * time.Second,
	WriteTimeout:      10 * time.Second,
	IdleTimeout:       30 * time.Second,
	MaxConns:          64,
}

// withDefaults fills the zero fields of l from DefaultHTTPLimits.
func (l HTTPLimits) withDefaults() HTTPLimits {
	d := DefaultHTTPLimits
	if l.ReadHeaderTimeout > 0 {
		d.ReadHeaderTimeout = l.ReadHeaderTimeout
	}
	if l.ReadTimeout > 0 {
		d.ReadTimeout = l.ReadTimeout
	}
	if l.WriteTimeout > 0 {
		d.WriteTimeout = l.WriteTimeout
	}
	if l.IdleTimeout > 0 {
		d.IdleTimeout = l.IdleTimeout
	}
	if l.MaxConns > 0 {
		d.MaxConns = l.MaxConns
	}
	return d
}

// limitListener accepts at most n connections at a time: Accept waits for a slot, so
// connections beyond the cap stay in the kernel's accept queue (bounded by its backlog)
// instead of each costing the runner a goroutine, buffers and a file descriptor. The
// standard library's http.Server has no such cap; golang.org/x/net/netutil has one, but
// not in this module's dependencies, and it is twenty lines.
type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	inUse     atomic.Int64
	peak      atomic.Int64 // the most connections ever open at once (tests read it)
}

func newLimitListener(l net.Listener, n int) *limitListener {
	return &limitListener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

// Accept waits for a free slot, then for a connection.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	n := l.inUse.Add(1)
	for p := l.peak.Load(); n > p && !l.peak.CompareAndSwap(p, n); p = l.peak.Load() {
	}
	return &limitConn{Conn: c, release: l.release}, nil
}

func (l *limitListener) release() {
	l.inUse.Add(-1)
	<-l.sem
}

// Close stops Accept, including one waiting for a slot.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn gives its slot back on the first Close (http.Server may close twice).
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
