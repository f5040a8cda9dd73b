package service

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iu-core/event-worker/internal/health"
	"github.com/iu-core/event-worker/internal/metrics"
	"github.com/iu-core/event-worker/internal/store"
	"github.com/iu-core/event-worker/internal/tick"
)

// Modes.
const (
	ModePoll   = "poll"
	ModeNotify = "notify"
	ModeHybrid = "hybrid"
)

// Wake sources besides the notifier's.
const (
	SourcePoll      = "poll"
	SourceFullBatch = "full_batch"
	SourceRetry     = "retry"
	SourceStartup   = "startup"
	sourceHousekeep = "" // a timer for housekeeping only: no pass
)

// DB is every database call the loop makes (store.Store implements it).
type DB interface {
	tick.DB
	RunnerBeat(ctx context.Context, executorID, instance, status string, metadata map[string]any, release bool) (store.RunnerBeat, error)
	Ping(ctx context.Context) error
	QueueHealth(ctx context.Context) ([]store.QueueHealthRow, error)
}

// Listener is the notifier as the loop sees it (nil in poll mode).
type Listener interface {
	Run(ctx context.Context)
	Up() bool
}

// Config of the loop.
type Config struct {
	Mode               string
	Workers            []string
	Batch              int
	PollInterval       time.Duration
	StaleCheckInterval time.Duration
	ReapInterval       time.Duration
	// RetentionInterval is the cadence of fn_iu_retention_run(false) (0: never; the
	// runner then leaves retention to cron).
	RetentionInterval time.Duration
	PassBudget        time.Duration
	ShutdownGrace     time.Duration
	// CallTimeout is one database call's client-side deadline (the store applies it);
	// the loop uses it to judge whether it has stalled.
	CallTimeout time.Duration
	ExecutorID  string
	HTTPAddr    string
	// HTTP bounds the metrics port's connections (zero fields: DefaultHTTPLimits).
	HTTP HTTPLimits
	// RetryMin and RetryMax bound the backoff after a failed pass (zero: DefaultRetryMin
	// and DefaultRetryMax): the first retry waits RetryMin, each further one twice as long
	// up to RetryMax, each wait spread ±20%.
	RetryMin, RetryMax time.Duration
}

// The retry backoff after a failed pass: 250 ms doubling to 30 s. During an outage that is
// 8 attempts in the first 30 s and then two a minute, instead of one per poll interval.
const (
	DefaultRetryMin = 250 * time.Millisecond
	DefaultRetryMax = 30 * time.Second
)

// Service is one running loop. Build it with New, wire the notifier's hooks to Wake and
// ListenerChanged, then call Run.
type Service struct {
	cfg      Config
	db       DB
	listener Listener
	log      *slog.Logger
	m        *metrics.Metrics

	wake     chan string   // work wake-ups (coalesced: one pending is enough)
	kick     chan struct{} // re-evaluate the wait (listener state changed)
	alive    atomic.Int64  // unix nanos of the last loop progress
	draining atomic.Bool
	stopped  atomic.Bool
	addr     atomic.Value // string: the bound HTTP address
	http     atomic.Pointer[limitListener]
	out      *outage // the database outage in progress, if any (loop and /readyz)
	ready    readiness

	// instance names this runner process to fn_queue_runner_beat: its hold on the heartbeat
	// row (one uuid per process, never reused).
	instance string
	host     string

	// loop goroutine only
	busySaid      map[string]busyNote // per worker: the holder last named at WARN, and when
	standby       bool                // another live runner holds the heartbeat row
	cadenceWarned bool
	lastBeat      time.Time // when the heartbeat was last written
	lastErr       error     // the last pass's error (nil: it succeeded)
	failedPasses  int       // consecutive failed passes
}

// heartbeatEvery is the longest the runner waits between two heartbeat writes.
const heartbeatEvery = 10 * time.Second

// New creates the service. listener may be nil (poll mode).
func New(cfg Config, db DB, listener Listener, log *slog.Logger, m *metrics.Metrics) *Service {
	if cfg.PassBudget <= 0 {
		cfg.PassBudget = 10 * time.Second
	}
	cfg.HTTP = cfg.HTTP.withDefaults()
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = DefaultRetryMin
	}
	if cfg.RetryMax < cfg.RetryMin {
		cfg.RetryMax = max(DefaultRetryMax, cfg.RetryMin)
	}
	host, _ := os.Hostname()
	return &Service{cfg: cfg, db: db, listener: listener, log: log, m: m, instance: NewInstance(), host: host,
		wake: make(chan string, 1), kick: make(chan struct{}, 1), out: newOutage(log, cfg.RetryMin, cfg.RetryMax)}
}

// NewInstance draws the uuid that names one runner process to fn_queue_runner_beat.
func NewInstance() string {
	var b [16]byte
	_, _ = crand.Read(b[:]) // crypto/rand.Read never fails (it panics if the system has no randomness)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// Wake asks for a pass (the notifier's Wake hook).
func (s *Service) Wake(source string) {
	select {
	case s.wake <- source:
	default: // a wake-up is already pending: it will see this work too
	}
}

// ListenerChanged re-evaluates the wait (the notifier's State hook).
func (s *Service) ListenerChanged(up bool) {
	if up {
		s.m.ListenerUp.Set(1)
	} else {
		s.m.ListenerUp.Set(0)
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Addr is the bound HTTP address once Run is serving ("" before).
func (s *Service) Addr() string { a, _ := s.addr.Load().(string); return a }

// Run serves HTTP and loops until ctx is cancelled, then drains and returns. The error is
// non-nil only when the service could not start (e.g. the HTTP address is taken).
func (s *Service) Run(ctx context.Context) error {
	tcp, err := net.Listen("tcp", s.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listening on --http-addr %s: %w", s.cfg.HTTPAddr, err)
	}
	ln := newLimitListener(tcp, s.cfg.HTTP.MaxConns)
	s.http.Store(ln)
	s.addr.Store(ln.Addr().String())
	srv := s.httpServer()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http server stopped", "error", err)
		}
	}()
	s.log.Info("iu-runner run started", "mode", s.cfg.Mode, "workers", s.cfg.Workers, "batch", s.cfg.Batch,
		"poll_interval", s.cfg.PollInterval.String(), "stale_check_interval", s.cfg.StaleCheckInterval.String(),
		"http_addr", ln.Addr().String(), "executor_id", s.cfg.ExecutorID, "shutdown_grace", s.cfg.ShutdownGrace.String())

	// The listener lives until the loop is done.
	lctx, lcancel := context.WithCancel(context.Background())
	if s.listener != nil {
		wg.Add(1)
		go func() { defer wg.Done(); s.listener.Run(lctx) }()
	}

	// Work runs on its own context: a stop signal stops new work at once, but the call in
	// flight gets --shutdown-grace to commit before it is cancelled (and rolled back).
	workCtx, workCancel := context.WithCancel(context.Background())
	defer workCancel()
	loopDone := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-loopDone:
			return
		case <-ctx.Done():
		}
		s.draining.Store(true)
		s.m.Draining.Set(1)
		s.log.Info("stop signal: draining: no new batch starts; the call in flight may finish",
			"shutdown_grace", s.cfg.ShutdownGrace.String())
		t := time.NewTimer(s.cfg.ShutdownGrace)
		defer t.Stop()
		select {
		case <-loopDone:
		case <-t.C:
			s.log.Warn("shutdown grace spent: cancelling the call in flight (its transaction rolls back)")
			workCancel()
		}
	}()

	s.loop(ctx, workCtx)
	s.stopped.Store(true)
	close(loopDone)
	s.releaseHeartbeat()

	lcancel()
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	_ = srv.Shutdown(sctx)
	scancel()
	wg.Wait()
	s.log.Info("iu-runner run stopped")
	return nil
}

func (s *Service) loop(stop, work context.Context) {
	now := time.Now()
	nextPoll, nextStale, nextReap := now, now, now
	nextRetention := now.Add(s.cfg.RetentionInterval) // the first run one interval after the start
	var retryAt time.Time
	retry := time.Duration(0)
	source := SourceStartup
	for {
		s.alive.Store(time.Now().UnixNano())
		afterPass := false
		if source != sourceHousekeep {
			afterPass = true
			s.m.Wakeups.WithLabelValues(source).Inc()
			more, err := s.pass(stop, work)
			if err != nil && stop.Err() == nil {
				retry = min(max(2*retry, s.cfg.RetryMin), s.cfg.RetryMax)
				in := Jitter(retry, 5) // ±20%: a fleet that failed together does not retry in step
				retryAt = time.Now().Add(in)
				s.lastErr = err
				s.failedPasses++
				if Unavailable(err) {
					s.out.failed("worker_run", err, "retry_in", in.String())
				} else {
					s.databaseAnswered()
					s.log.Warn("pass failed; retrying", "in", in.String(), "error", err)
				}
			} else {
				retry, retryAt = 0, time.Time{}
				if err == nil {
					s.lastErr, s.failedPasses = nil, 0
					s.databaseAnswered()
				}
			}
			nextPoll = time.Now().Add(s.jitter(s.cfg.PollInterval))
			if more && err == nil && stop.Err() == nil {
				source = SourceFullBatch // pass budget spent with work left: go on at once
				s.housekeeping(work, true, &nextStale, &nextReap, &nextRetention)
				continue
			}
		}
		if stop.Err() != nil {
			return
		}
		s.housekeeping(work, afterPass, &nextStale, &nextReap, &nextRetention)

		// While the database is unreachable, only the retry timer (and a wake-up, such as
		// the listener's reconnection) starts database work: the poll and the housekeeping
		// timers would only add attempts and log lines to the backoff.
		outage := s.out.active()
		if outage && retryAt.IsZero() { // opened by the heartbeat or /readyz: find out on the backoff
			retry = max(retry, s.cfg.RetryMin)
			retryAt = time.Now().Add(Jitter(retry, 5))
		}
		pollActive := retryAt.IsZero() && (s.cfg.Mode != ModeNotify || s.listener == nil || !s.listener.Up())
		housekeep := minTime(nextStale, nextReap)
		if s.cfg.RetentionInterval > 0 {
			housekeep = minTime(housekeep, nextRetention)
		}
		var deadline time.Time
		switch {
		case outage:
			deadline = retryAt
		case !retryAt.IsZero(): // a pass failed, but the database answers: housekeeping keeps its cadence
			deadline = minTime(retryAt, housekeep)
		default:
			deadline = housekeep
			if pollActive {
				deadline = minTime(deadline, nextPoll)
			}
		}
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-stop.Done():
			t.Stop()
			return
		case source = <-s.wake:
		case <-s.kick:
			source = sourceHousekeep
		case <-t.C:
			n := time.Now()
			switch {
			case !retryAt.IsZero() && !n.Before(retryAt):
				source = SourceRetry
			case pollActive && !n.Before(nextPoll):
				source = SourcePoll
			case retryAt.IsZero() && s.cfg.Mode == ModeNotify && !n.Before(nextStale):
				source = SourcePoll // notify mode's safety pass: a lost NOTIFY waits one stale-check at most
			default:
				source = sourceHousekeep
			}
		}
		t.Stop()
	}
}

// databaseAnswered closes an outage, if one is open: the INFO line with its length, and
// the listener, if it is still waiting out its own reconnect backoff, is told to try now.
func (s *Service) databaseAnswered() {
	if !s.out.recovered() || s.listener == nil || s.listener.Up() {
		return
	}
	if r, ok := s.listener.(interface{ RetryNow() }); ok {
		r.RetryNow()
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// jitter spreads polls ±10% so a fleet of runners does not poll in step.
func (s *Service) jitter(d time.Duration) time.Duration { return Jitter(d, 10) }

// Jitter returns d spread uniformly by ±d/frac (frac 10: ±10%, 5: ±20%).
func Jitter(d time.Duration, frac int64) time.Duration {
	if d <= 0 || frac <= 0 {
		return d
	}
	spread := d / time.Duration(frac)
	return d - spread + rand.N(2*spread+1)
}

// pass serves every worker round-robin (one batch of each in turn, see tick.RoundRobin)
// until each is caught up, gated, busy or failed, or the pass budget is spent. more
// reports that a worker stopped on the pass budget with work left.
func (s *Service) pass(stop, work context.Context) (more bool, err error) {
	if stop.Err() != nil {
		return false, nil
	}
	res, err := tick.RoundRobin(work, s.db, s.cfg.Workers, tick.Drain{
		Batch:     s.cfg.Batch,
		Deadline:  time.Now().Add(s.cfg.PassBudget),
		Continue:  func() bool { return stop.Err() == nil },
		Observe:   s.observe,
		FullBatch: func(string) { s.m.Wakeups.WithLabelValues(SourceFullBatch).Inc() },
	})
	for _, r := range res {
		if r.Stopped == tick.StopBudget {
			more = true
		}
		if r.Claimed > 0 {
			s.log.Info("worker pass", "worker", r.Worker, "runs", r.Runs, "claimed", r.Claimed,
				"attempts_written", r.AttemptsWritten, "dead_lettered", r.DeadLettered, "by_status", r.ByStatus, "stopped", r.Stopped)
		}
	}
	if err == nil {
		s.m.LastPass.SetToCurrentTime()
	}
	return more, err
}

func (s *Service) observe(worker string, r store.WorkerRun, d time.Duration, err error) {
	s.m.RunDuration.WithLabelValues(worker).Observe(d.Seconds())
	switch {
	case err != nil:
		s.m.WorkerRuns.WithLabelValues(worker, "error").Inc()
		s.m.DBErrors.WithLabelValues("worker_run").Inc()
		return
	case r.Gated:
		s.m.WorkerRuns.WithLabelValues(worker, "gated").Inc()
		s.log.Debug("worker gated", "worker", worker, "reason", r.Reason)
	case r.Busy:
		s.m.WorkerRuns.WithLabelValues(worker, "busy").Inc()
		s.noteBusy(worker, r)
	default:
		s.m.WorkerRuns.WithLabelValues(worker, "ok").Inc()
	}
	for st, n := range r.ByStatus {
		s.m.EventsRouted.WithLabelValues(worker, st).Add(float64(n))
	}
	if r.DeadLettered > 0 {
		s.m.DeadLetters.WithLabelValues(worker).Add(float64(r.DeadLettered))
	}
}

// BeatInterval is how often the runner writes its own heartbeat at most:
// min(--poll-interval, 10s), so a busy loop does not upsert the row on every pass.
func (s *Service) BeatInterval() time.Duration { return min(s.cfg.PollInterval, heartbeatEvery) }

// beatStatus is the heartbeat status for the last pass: ok, warn (the last pass failed;
// retrying) or error (three or more consecutive passes failed).
func (s *Service) beatStatus() string {
	switch {
	case s.lastErr == nil:
		return "ok"
	case s.failedPasses >= 3:
		return "error"
	}
	return "warn"
}

// maxErrLen bounds the error text in the heartbeat row.
const maxErrLen = 200

// housekeeping beats the heartbeat (at most every BeatInterval) and runs the stale-check,
// the health gauges and the lease reaper when they are due. During an outage only the
// heartbeat is tried, and only right after a pass (so on the retry backoff): it reports the
// failing passes if the database lets it; the rest waits until the database answers.
func (s *Service) housekeeping(ctx context.Context, afterPass bool, nextStale, nextReap, nextRetention *time.Time) {
	if s.out.active() && !afterPass {
		return
	}
	if s.cfg.ExecutorID != "" && (s.lastBeat.IsZero() || time.Since(s.lastBeat) >= s.BeatInterval()) {
		s.lastBeat = time.Now()
		// keys must pass the payload-hygiene check (no body, content, raw, token, ...)
		md := map[string]any{"runner": "iu-runner", "mode": s.cfg.Mode, "workers": s.cfg.Workers,
			"pid": os.Getpid(), "host": s.host, "poll_interval_seconds": s.cfg.PollInterval.Seconds()}
		if s.listener != nil {
			md["listener_up"] = s.listener.Up()
		}
		if s.lastErr != nil {
			msg := s.lastErr.Error()
			if len(msg) > maxErrLen {
				msg = msg[:maxErrLen] + "..."
			}
			md["last_error"] = msg
			md["failed_passes"] = s.failedPasses
		}
		if res, err := s.db.RunnerBeat(ctx, s.cfg.ExecutorID, s.instance, s.beatStatus(), md, false); err != nil {
			s.dbError("heartbeat", err)
		} else {
			s.databaseAnswered()
			s.noteBeat(res)
		}
	}
	if s.out.active() {
		return
	}
	now := time.Now()
	if !now.Before(*nextStale) {
		*nextStale = now.Add(s.cfg.StaleCheckInterval)
		if res, err := s.db.StaleCheck(ctx); err != nil {
			s.dbError("stale_check", err)
		} else {
			s.log.Debug("stale-check", "result", res.Raw)
			s.m.StaleCheckContended.Set(float64(res.Contended))
			LogContended(s.log, res)
		}
		if p, ok := s.db.(tick.Partitioner); ok && !s.out.active() {
			res, err := p.MaintainPartitions(ctx)
			s.observeMaintenance(res, err)
		}
		if !s.out.active() {
			s.refreshHealth(ctx)
		}
	}
	if r, ok := s.db.(tick.Retainer); ok && s.cfg.RetentionInterval > 0 && !now.Before(*nextRetention) && !s.out.active() {
		*nextRetention = now.Add(s.cfg.RetentionInterval)
		res, err := r.RunRetention(ctx)
		s.observeRetention(res, err)
	}
	if !now.Before(*nextReap) && !s.out.active() {
		*nextReap = now.Add(s.cfg.ReapInterval)
		if res, err := s.db.ReapLeases(ctx); err != nil {
			s.dbError("reap", err)
		} else {
			s.log.Debug("lease reaper", "result", res.Raw)
		}
		if p, ok := s.db.(tick.Pruner); ok && !s.out.active() {
			if raw, err := p.PruneJobs(ctx); err != nil {
				s.dbError("prune", err)
			} else {
				s.log.Debug("job prune", "result", raw)
			}
		}
	}
}

// busyNote is what the loop last said about a worker's lock holder.
type busyNote struct {
	pids string
	at   time.Time
}

// noteBusy names the session holding a worker's lock when a run comes back busy. A run of
// another runner (a warm standby replica, cron overlapping the loop) is routine: DEBUG. Any
// other holder (a session idle in its transaction, one that is not iu-runner, or one open for
// more than a minute: any login may take the worker's advisory lock) stops the worker, and
// is said at WARN with its pid and login: once per holder, and again every 5 minutes while
// it holds on.
func (s *Service) noteBusy(worker string, r store.WorkerRun) {
	suspect, names := BusyHolders(r)
	if !suspect {
		s.log.Debug("worker busy: another run holds it", "worker", worker, "held_by", names)
		return
	}
	if s.busySaid == nil {
		s.busySaid = map[string]busyNote{}
	}
	key := strings.Join(names, ";")
	if n, ok := s.busySaid[worker]; ok && n.pids == key && time.Since(n.at) < 5*time.Minute {
		return
	}
	s.busySaid[worker] = busyNote{pids: key, at: time.Now()}
	s.log.Warn("worker busy: a session holds its lock and no run can take it", "worker", worker, "held_by", names,
		"runbook", "runbooks/route-worker-held-back-or-busy.md#busy-true")
}

// BusyHolders describes the holders of a busy run's worker lock, and whether one of them is
// not just another runner's run: a session that is not iu-runner, idle in its transaction,
// or in a transaction open for more than a minute.
func BusyHolders(r store.WorkerRun) (suspect bool, names []string) {
	for _, h := range r.LockHeldBy {
		names = append(names, h.Describe())
		switch {
		case h.ApplicationName == nil || *h.ApplicationName != "iu-runner":
			suspect = true
		case h.State != nil && strings.HasPrefix(*h.State, "idle in transaction"):
			suspect = true
		case h.XactAgeSeconds != nil && *h.XactAgeSeconds > 60:
			suspect = true
		}
	}
	return suspect, names
}

// LogContended says, at WARN, that a stale-check had to alert silent executors without
// their alert state because another session holds it (a stale-check's transaction kept
// open), and names that session: it cannot suppress the alerts, but it is someone to stop.
func LogContended(log *slog.Logger, res store.StaleCheck) {
	if res.Contended == 0 {
		return
	}
	holders := make([]string, 0, len(res.BlockedBy))
	for _, h := range res.BlockedBy {
		holders = append(holders, h.Describe())
	}
	log.Warn("stale-check: another session holds the alert state of silent executors (a stale-check's transaction kept open): they were alerted anyway; end that session",
		"contended", res.Contended, "held_by", holders, "runbook", "runbooks/alerting.md#iustalecheckheldopen")
}

// noteBeat follows the runner's hold on its heartbeat row: held by another live runner,
// this one is its standby (said once, at WARN, with the holder); beaten again, it holds the
// row (said once, at INFO, when it took the row over or left standby).
func (s *Service) noteBeat(res store.RunnerBeat) {
	if res.Held {
		s.m.HeartbeatStandby.Set(1)
		if !s.standby {
			s.standby = true
			attrs := []any{"executor_id", s.cfg.ExecutorID, "instance", s.instance}
			if h := res.HeldBy; h != nil {
				attrs = append(attrs, "holder_instance", h.Instance, "holder_login", h.SessionUser,
					"holder_last_beat_at", h.LastBeatAt, "free_at", h.FreeAt)
				if h.PID != nil {
					attrs = append(attrs, "holder_pid", *h.PID)
				}
				if h.Host != nil {
					attrs = append(attrs, "holder_host", *h.Host)
				}
			}
			s.log.Warn("another live runner holds this --executor-id's heartbeat row: this runner works as its standby "+
				"and beats nothing until that one stops (give each runner its own --executor-id to watch both)", attrs...)
		}
		return
	}
	s.m.HeartbeatStandby.Set(0)
	if s.standby || res.TookOver {
		s.log.Info("this runner holds its heartbeat row now", "executor_id", s.cfg.ExecutorID, "instance", s.instance,
			"took_over", res.TookOver)
	}
	s.standby = false
}

// releaseHeartbeat hands the heartbeat row back when the loop stops, with a last beat, so
// the next runner of this --executor-id (a restart, a rollout's new pod) takes it at once
// instead of after the 30 s a crashed holder keeps it. A standby holds nothing to release.
func (s *Service) releaseHeartbeat() {
	if s.cfg.ExecutorID == "" || s.standby || s.out.active() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	md := map[string]any{"runner": "iu-runner", "mode": s.cfg.Mode, "pid": os.Getpid(), "host": s.host, "stopped": true}
	if _, err := s.db.RunnerBeat(ctx, s.cfg.ExecutorID, s.instance, "ok", md, true); err != nil {
		s.log.Info("could not hand the heartbeat row back: the next runner of this --executor-id takes it over 30 s after the last beat",
			"executor_id", s.cfg.ExecutorID, "error", err)
	}
}

// dbError counts a failed housekeeping call and logs it: through the outage (first
// failure, then summaries) when the database is unreachable, at once otherwise.
func (s *Service) dbError(op string, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	s.m.DBErrors.WithLabelValues(op).Inc()
	if Unavailable(err) {
		s.out.failed(op, err)
		return
	}
	s.databaseAnswered()
	s.log.Warn("database call failed", "op", op, "error", err)
}

// refreshHealth mirrors v_queue_health into the iu_queue_health_* gauges: the new values
// are built first and swapped in at once, so a scrape never sees an empty set.
func (s *Service) refreshHealth(ctx context.Context) {
	rows, err := s.db.QueueHealth(ctx)
	if err != nil {
		s.dbError("queue_health", err)
		return
	}
	h := metrics.Health{Rows: make([]metrics.HealthRow, 0, len(rows))}
	smallest := 0.0 // the smallest effective stale threshold, to check our own cadence
	for _, r := range rows {
		hr := metrics.HealthRow{Source: r.Source, Subject: r.Subject, StatusHint: r.StatusHint,
			Age: gaugeValue(r.AgeSeconds), Backlog: gaugeValue(r.Backlog)} // backlog: cursors and queued jobs
		if r.Domain != nil {
			hr.Domain = *r.Domain
		}
		if r.Source == store.SourceDeadLetterEvent || r.Source == store.SourceDeadLetterJob {
			hr.OpenDeadLetters = gaugeValue(r.DeadLettered)
		}
		if r.Source == store.SourceCursor && r.StatusHint == "gated" {
			if d, err := r.Cursor(); err == nil {
				hr.GatedWaiting = gaugeValue(d.GatedWaitingSeconds)
			}
		}
		if r.Source == store.SourceHeartbeat && r.StatusHint == "stale" {
			h.StaleExecutors++
		}
		if r.Source == store.SourceHeartbeat && r.StaleThresholdSeconds != nil {
			if v := float64(*r.StaleThresholdSeconds); v > 0 && (smallest == 0 || v < smallest) {
				smallest = v
			}
		}
		problem := health.Problem(r)
		hr.Problem = problem != ""
		hr.ErrorStatus = problem == "error_status"
		h.Rows = append(h.Rows, hr)
	}
	s.m.SetHealth(h)
	tooLong := CadenceTooLong(s.cfg.StaleCheckInterval, smallest)
	if tooLong {
		s.m.StaleCheckTooLong.Set(1)
	} else {
		s.m.StaleCheckTooLong.Set(0)
	}
	if tooLong && !s.cadenceWarned {
		s.cadenceWarned = true
		s.log.Warn("--stale-check-interval is not under half the smallest stale threshold: silences may be noticed late",
			"stale_check_interval", s.cfg.StaleCheckInterval.String(), "smallest_threshold_seconds", smallest)
	}
}

// gaugeValue converts a nullable count for a gauge (nil stays nil: not exported).
func gaugeValue(p *int64) *float64 {
	if p == nil {
		return nil
	}
	v := float64(*p)
	return &v
}

// CadenceTooLong reports that a stale-check every interval is not under half the smallest
// stale threshold (seconds; 0: unknown, never too long). Exactly half is too long.
func CadenceTooLong(interval time.Duration, smallestThresholdSeconds float64) bool {
	if smallestThresholdSeconds <= 0 {
		return false
	}
	return interval >= time.Duration(smallestThresholdSeconds*float64(time.Second))/2
}

// httpServer is the server of /metrics, /healthz and /readyz. The port is open to whoever
// can reach it, so every phase of a connection is bounded: the headers, the whole request
// (a body trickled a byte at a time is cut off, including the discard of a body the GET
// handlers never read), the response and the keep-alive wait; the listener caps how many
// connections are served at once (Run), so a flood waits in the kernel's queue instead of
// costing the runner goroutines and the file descriptors its database pool needs.
func (s *Service) httpServer() *http.Server {
	l := s.cfg.HTTP
	return &http.Server{Handler: s.Handler(), ReadHeaderTimeout: l.ReadHeaderTimeout, ReadTimeout: l.ReadTimeout,
		WriteTimeout: l.WriteTimeout, IdleTimeout: l.IdleTimeout, MaxHeaderBytes: 16 << 10}
}

// Handler serves /metrics, /healthz and /readyz.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.m.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := s.aliveErr(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok: loop alive")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			http.Error(w, "draining: stop signal received", http.StatusServiceUnavailable)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout+time.Second)
		defer cancel()
		if err := s.ready.check(ctx, s.db.Ping, s.readyFailed); err != nil {
			http.Error(w, "not ready: database unreachable", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok: database reachable")
	})
	return mux
}

// readyFailed logs a failed /readyz ping. The reason (user, host, authentication
// failure...) goes to the log only: the port tells a stranger nothing about the database.
// During an outage it is one more failure of the outage's summary, not a line per probe.
func (s *Service) readyFailed(err error) {
	if Unavailable(err) {
		s.out.failed("readyz", err)
		return
	}
	s.log.Warn("readyz: database unreachable", "error", err)
}

// aliveErr says why the loop is not alive (nil when it is). The loop reports progress at
// least every stale-check interval; a pass may add its budget and one call timeout.
func (s *Service) aliveErr() error {
	if s.stopped.Load() {
		return errors.New("loop stopped")
	}
	last := s.alive.Load()
	if last == 0 {
		return errors.New("loop not started")
	}
	call := s.cfg.CallTimeout
	if call <= 0 {
		call = 60 * time.Second
	}
	window := 2*s.cfg.StaleCheckInterval + s.cfg.PassBudget + call + 10*time.Second
	// during an outage the loop goes round once per retry, up to RetryMax (+20% jitter)
	window = max(window, s.cfg.RetryMax*6/5+call+10*time.Second)
	if age := time.Since(time.Unix(0, last)); age > window {
		return fmt.Errorf("loop stalled: no progress for %s (limit %s)", age.Round(time.Second), window)
	}
	return nil
}
