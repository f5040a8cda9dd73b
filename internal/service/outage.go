package service

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Unavailable reports whether err says the database could not be reached or stopped
// answering, as opposed to an answer that refused the call: no connection could be made
// (refused, DNS, authentication), the connection broke or timed out on the client's side,
// or the server said it is shutting down, starting up or full. Those repeat on every
// attempt until the database is back, so they are an outage: backed off and summarised.
// Any other error from the server (a SQL error, a statement timeout) proves the server
// answered and is logged as it comes.
func Unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"): // connection exception
			return true
		case pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03": // admin or crash shutdown, cannot connect now
			return true
		case pe.Code == "53300": // too many connections
			return true
		}
		return false
	}
	return true // no answer from the server at all: network, client deadline, closed connection
}

// outage turns a run of unavailable-database failures into a few log lines, however many
// calls fail meanwhile (the loop's retries, the heartbeat, /readyz): the first failure in
// full, then at most one summary line per backoff step saying how many failures it did not
// log, and one INFO line when a call succeeds again, with how long the outage lasted. The
// steps double from min to max, as the loop's retries do, so the log follows the retries
// instead of the clock. Safe for concurrent use (/readyz reports from HTTP goroutines).
type outage struct {
	log      *slog.Logger
	min, max time.Duration

	mu         sync.Mutex
	since      time.Time // zero: no outage
	failures   int       // failed calls in this outage
	suppressed int       // failed calls since the last line
	step       time.Duration
	nextLine   time.Time // no summary line before this
}

func newOutage(log *slog.Logger, min, max time.Duration) *outage {
	return &outage{log: log, min: min, max: max}
}

// active reports an open outage.
func (o *outage) active() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return !o.since.IsZero()
}

// failed records one unavailable-database failure of op; attrs are added to a line it logs.
func (o *outage) failed(op string, err error, attrs ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	o.failures++
	if o.since.IsZero() {
		o.since, o.step = now, o.min
		o.nextLine = now.Add(o.step)
		o.log.Warn("database unreachable: retrying with backoff; further failures are summarised, at most one line per retry step",
			append([]any{"op", op, "error", err.Error(), "backoff_max", o.max.String()}, attrs...)...)
		return
	}
	if now.Before(o.nextLine) {
		o.suppressed++
		return
	}
	o.log.Warn("database still unreachable",
		append([]any{"op", op, "error", err.Error(), "outage_for", now.Sub(o.since).Round(time.Millisecond).String(),
			"failures", o.failures, "suppressed", o.suppressed}, attrs...)...)
	o.suppressed = 0
	o.step = min(2*o.step, o.max)
	o.nextLine = now.Add(o.step)
}

// recovered closes an open outage with one INFO line; it reports whether one was open.
func (o *outage) recovered() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.since.IsZero() {
		return false
	}
	d := time.Since(o.since)
	o.log.Info("database reachable again", "outage", d.Round(time.Millisecond).String(), "outage_seconds", d.Seconds(),
		"failures", o.failures, "suppressed", o.suppressed)
	o.since, o.failures, o.suppressed = time.Time{}, 0, 0
	return true
}
