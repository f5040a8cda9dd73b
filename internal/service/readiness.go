package service

import (
	"context"
	"sync"
	"time"
)

// readyFor is how long one /readyz database ping answers for. A kubelet probes every few
// seconds, so each probe still sees a fresh result; a flood of requests sees one ping.
const readyFor = time.Second

// readyTimeout bounds the ping itself.
const readyTimeout = 2 * time.Second

// readiness shares /readyz's database ping between requests. Every ping takes a
// connection from the runner's small pool, so a stranger sending /readyz requests as fast
// as the port accepts them (up to HTTPLimits.MaxConns at once) would otherwise hold the
// pool and stall the worker passes; now at most one ping is in flight, concurrent
// requests wait for its result, and a result is reused for readyFor.
type readiness struct {
	mu       sync.Mutex
	at       time.Time     // when the last ping ended (zero: never)
	err      error         // its result
	inflight chan struct{} // closed when the ping in flight ends (nil: none)
}

// check returns the shared result, pinging through ping when it is older than readyFor.
// ctx only bounds the wait of this request: the ping runs on its own deadline, so a client
// that hangs up does not fail it for the others. report is called once per ping that
// failed (the log line), not once per request.
func (r *readiness) check(ctx context.Context, ping func(context.Context) error, report func(error)) error {
	r.mu.Lock()
	if !r.at.IsZero() && time.Since(r.at) < readyFor {
		err := r.err
		r.mu.Unlock()
		return err
	}
	if ch := r.inflight; ch != nil {
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.err
	}
	ch := make(chan struct{})
	r.inflight = ch
	r.mu.Unlock()

	pctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	err := ping(pctx)
	cancel()
	if err != nil {
		report(err)
	}
	r.mu.Lock()
	r.at, r.err, r.inflight = time.Now(), err, nil
	r.mu.Unlock()
	close(ch)
	return err
}
