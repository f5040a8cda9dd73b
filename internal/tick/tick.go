package tick

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/iu-core/event-worker/internal/store"
)

// DB is the part of store.Store a pass needs.
type DB interface {
	RunWorker(ctx context.Context, worker string, batch int) (store.WorkerRun, error)
	StaleCheck(ctx context.Context) (store.StaleCheck, error)
	ReapLeases(ctx context.Context) (store.Reap, error)
}

// Pruner is a DB that also deletes finished jobs past their retention (fn_job_prune);
// store.Store is one. The pruning runs right after the reaper, on the reaper's cadence.
type Pruner interface {
	PruneJobs(ctx context.Context) (json.RawMessage, error)
}

// Partitioner is a DB that also keeps the history tables partitioned ahead
// (fn_iu_partition_maintain); store.Store is one. It runs right after the stale-check, on
// the stale-check's cadence: it must run often enough that producers never outrun the
// partitions (they would land in the default partition, which retention never drops).
type Partitioner interface {
	MaintainPartitions(ctx context.Context) (store.PartitionMaintenance, error)
}

// Retainer is a DB that also drops history partitions past their retention
// (fn_iu_retention_run(false), workflow_admin); store.Store is one. Opt-in: `tick
// --retention`, `run --retention-interval`.
type Retainer interface {
	RunRetention(ctx context.Context) (store.RetentionRun, error)
}

// Why a worker's drain stopped.
const (
	StopCaughtUp = "caught_up"
	StopGated    = "gated"
	StopBusy     = "busy"
	StopBudget   = "budget"
	StopHalted   = "halted" // the caller asked to stop taking work (shutdown)
	StopError    = "error"
)

// Drain tunes one worker's drain.
type Drain struct {
	Batch      int
	Deadline   time.Time // zero: none
	MaxBatches int       // 0: none
	// Continue is asked before every batch after the first; false stops the drain
	// (the service uses it to stop taking work on shutdown). Nil means always.
	Continue func() bool
	// Observe sees every call (for metrics): its summary, duration and error.
	Observe func(worker string, r store.WorkerRun, d time.Duration, err error)
	// FullBatch is called when a full batch is followed at once by the next.
	FullBatch func(worker string)
}

// WorkerResult adds up one worker's runs in a pass.
type WorkerResult struct {
	Worker          string           `json:"worker"`
	Runs            int              `json:"runs"`
	Claimed         int64            `json:"claimed"`
	AttemptsWritten int64            `json:"attempts_written"`
	DeadLettered    int64            `json:"dead_lettered"`
	ByStatus        map[string]int64 `json:"by_status"`
	Gated           bool             `json:"gated"`
	Busy            bool             `json:"busy"`
	Reason          string           `json:"reason,omitempty"`
	Stopped         string           `json:"stopped"`
	Error           string           `json:"error,omitempty"`
	LastSummary     json.RawMessage  `json:"last_summary,omitempty"`
}

// DrainWorker runs batches of one worker until it is caught up, gated, busy, out of budget
// or told to stop. The error is the failed call's, wrapped.
func DrainWorker(ctx context.Context, db DB, worker string, d Drain) (WorkerResult, error) {
	res, err := RoundRobin(ctx, db, []string{worker}, d)
	return res[0], err
}

// RoundRobin serves several workers fairly: one batch of each worker in turn, round after
// round, until every worker is caught up, gated, busy or failed, or the budget (the
// deadline, MaxBatches per worker) is spent, or Continue says stop. A worker with a long
// backlog therefore delays the others by one batch per round, never by its whole backlog.
// Every worker gets its first batch even when the deadline has already passed (so a tick
// always learns whether it is gated or busy); MaxBatches counts per worker. The error
// joins the failed calls', each wrapped with its worker.
func RoundRobin(ctx context.Context, db DB, workers []string, d Drain) ([]WorkerResult, error) {
	res := make([]WorkerResult, len(workers))
	for i, w := range workers {
		res[i] = WorkerResult{Worker: w, ByStatus: map[string]int64{}}
	}
	var errs []error
	first := true
	for {
		active := 0
		for i := range res {
			r := &res[i]
			if r.Stopped != "" {
				continue
			}
			if !first && ((d.Continue != nil && !d.Continue()) || ctx.Err() != nil) {
				halt(res)
				return res, errors.Join(errs...)
			}
			if r.Runs > 0 {
				if (!d.Deadline.IsZero() && !time.Now().Before(d.Deadline)) || (d.MaxBatches > 0 && r.Runs >= d.MaxBatches) {
					r.Stopped = StopBudget
					continue
				}
				if d.FullBatch != nil {
					d.FullBatch(r.Worker)
				}
			}
			first = false
			if err := runOne(ctx, db, r, d); err != nil {
				errs = append(errs, err)
				continue
			}
			if r.Stopped == "" {
				active++
			}
		}
		if active == 0 {
			halt(res) // only the ones that never ran (Continue false before them)
			return res, errors.Join(errs...)
		}
	}
}

// halt marks every worker still open as stopped on request.
func halt(res []WorkerResult) {
	for i := range res {
		if res[i].Stopped == "" {
			res[i].Stopped = StopHalted
		}
	}
}

// runOne runs one batch of r's worker and records it; it sets r.Stopped when the worker
// is done for this pass.
func runOne(ctx context.Context, db DB, r *WorkerResult, d Drain) error {
	start := time.Now()
	run, err := db.RunWorker(ctx, r.Worker, d.Batch)
	if d.Observe != nil {
		d.Observe(r.Worker, run, time.Since(start), err)
	}
	if err != nil {
		r.Stopped, r.Error = StopError, err.Error()
		return fmt.Errorf("worker %s: %w", r.Worker, err)
	}
	r.Runs++
	r.Claimed += run.Claimed
	r.AttemptsWritten += run.AttemptsWritten
	r.DeadLettered += run.DeadLettered
	for k, v := range run.ByStatus {
		r.ByStatus[k] += v
	}
	r.LastSummary = run.Raw
	switch {
	case run.Gated:
		r.Gated, r.Reason, r.Stopped = true, run.Reason, StopGated
	case run.Busy:
		r.Busy, r.Reason, r.Stopped = true, run.Reason, StopBusy
	case run.CaughtUp:
		// The SQL decides: the run exhausted the worker's window (nothing left that it can
		// see now). A short batch means the same today, but the rule is the SQL's to own.
		r.Stopped = StopCaughtUp
	}
	return nil
}

// Options configure a whole tick.
type Options struct {
	Workers    []string
	Batch      int
	Budget     time.Duration // time budget for the worker runs (0: none)
	MaxBatches int           // per worker (0: none)
	SkipStale  bool          // do not run fn_queue_stale_check
	SkipReap   bool          // do not run fn_job_reap_expired_leases (nor fn_job_prune)
	// SkipPartitions: do not run fn_iu_partition_maintain
	SkipPartitions bool
	// Retention: also run fn_iu_retention_run(false), after the partition maintenance.
	Retention bool
	// Maintained and Retained see each maintenance and retention answer (for logs): a busy
	// or lock_timeout answer is not an error, so the caller must look.
	Maintained func(store.PartitionMaintenance)
	Retained   func(store.RetentionRun)
	// CallTimeout is one call's client-side deadline; with a Budget, the worker runs as a
	// whole are bounded by Budget + CallTimeout (the last batch may start just before the
	// budget ends and then runs at most one call timeout).
	CallTimeout time.Duration
	// Stop, when done (SIGINT/SIGTERM), stops the tick between batches: the call in
	// flight finishes on ctx, no new batch starts and the housekeeping calls are skipped.
	Stop    context.Context
	Observe func(worker string, r store.WorkerRun, d time.Duration, err error)
}

// Summary is the one JSON object `iu-runner tick` prints.
type Summary struct {
	OK          bool            `json:"ok"`
	Interrupted bool            `json:"interrupted,omitempty"`
	Database    string          `json:"database,omitempty"`
	Workers     []WorkerResult  `json:"workers"`
	Claimed     int64           `json:"claimed"`
	StaleCheck  json.RawMessage `json:"stale_check,omitempty"`
	Reaper      json.RawMessage `json:"reaper,omitempty"`
	Pruned      json.RawMessage `json:"pruned,omitempty"`
	Partitions  json.RawMessage `json:"partitions,omitempty"`
	Retention   json.RawMessage `json:"retention,omitempty"`
	DurationMS  int64           `json:"duration_ms"`
	Errors      []string        `json:"errors,omitempty"`
}

// Run does one full pass: the workers round-robin (one batch each in turn), then the
// stale-check and the reaper. A non-nil error means at least one call failed; the summary
// still says what was done. An interruption (o.Stop done) is not an error: the summary
// says interrupted and the skipped housekeeping waits for the next tick.
func Run(ctx context.Context, db DB, o Options) (Summary, error) {
	start := time.Now()
	s := Summary{Workers: []WorkerResult{}}
	stop := o.Stop
	if stop == nil {
		stop = context.Background()
	}
	d := Drain{Batch: o.Batch, MaxBatches: o.MaxBatches, Observe: o.Observe,
		Continue: func() bool { return stop.Err() == nil }}
	wctx := ctx
	if o.Budget > 0 {
		d.Deadline = start.Add(o.Budget)
		if o.CallTimeout > 0 {
			var cancel context.CancelFunc
			wctx, cancel = context.WithDeadline(ctx, d.Deadline.Add(o.CallTimeout))
			defer cancel()
		}
	}
	var errs []error
	if stop.Err() == nil {
		res, err := RoundRobin(wctx, db, o.Workers, d)
		s.Workers = res
		for _, r := range res {
			s.Claimed += r.Claimed
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	live := func() bool { return stop.Err() == nil && ctx.Err() == nil }
	if !o.SkipStale && live() {
		res, err := db.StaleCheck(ctx)
		if err != nil {
			errs = append(errs, err)
		}
		s.StaleCheck = res.Raw
	}
	if p, ok := db.(Partitioner); ok && !o.SkipPartitions && live() {
		res, err := p.MaintainPartitions(ctx)
		if err != nil {
			errs = append(errs, err)
		} else if o.Maintained != nil {
			o.Maintained(res)
		}
		s.Partitions = res.Raw
	}
	if r, ok := db.(Retainer); ok && o.Retention && live() {
		res, err := r.RunRetention(ctx)
		if err != nil {
			errs = append(errs, err)
		} else if o.Retained != nil {
			o.Retained(res)
		}
		s.Retention = res.Raw
	}
	if !o.SkipReap && live() {
		res, err := db.ReapLeases(ctx)
		if err != nil {
			errs = append(errs, err)
		}
		s.Reaper = res.Raw
		if p, ok := db.(Pruner); ok && live() {
			raw, err := p.PruneJobs(ctx)
			if err != nil {
				errs = append(errs, err)
			}
			s.Pruned = raw
		}
	}
	s.Interrupted = stop.Err() != nil
	for _, e := range errs {
		s.Errors = append(s.Errors, e.Error())
	}
	s.OK = len(errs) == 0
	s.DurationMS = time.Since(start).Milliseconds()
	return s, errors.Join(errs...)
}
