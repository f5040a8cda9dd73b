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
	StaleCheck(ctx context.Context) (json.RawMessage, error)
	ReapLeases(ctx context.Context) (json.RawMessage, error)
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
	res := WorkerResult{Worker: worker, ByStatus: map[string]int64{}}
	for {
		if res.Runs > 0 {
			if d.Continue != nil && !d.Continue() {
				res.Stopped = StopHalted
				return res, nil
			}
			if (!d.Deadline.IsZero() && !time.Now().Before(d.Deadline)) || (d.MaxBatches > 0 && res.Runs >= d.MaxBatches) {
				res.Stopped = StopBudget
				return res, nil
			}
			if d.FullBatch != nil {
				d.FullBatch(worker)
			}
		}
		start := time.Now()
		r, err := db.RunWorker(ctx, worker, d.Batch)
		if d.Observe != nil {
			d.Observe(worker, r, time.Since(start), err)
		}
		if err != nil {
			res.Stopped, res.Error = StopError, err.Error()
			return res, fmt.Errorf("worker %s: %w", worker, err)
		}
		res.Runs++
		res.Claimed += r.Claimed
		res.AttemptsWritten += r.AttemptsWritten
		res.DeadLettered += r.DeadLettered
		for k, v := range r.ByStatus {
			res.ByStatus[k] += v
		}
		res.LastSummary = r.Raw
		switch {
		case r.Gated:
			res.Gated, res.Reason, res.Stopped = true, r.Reason, StopGated
			return res, nil
		case r.Busy:
			res.Busy, res.Reason, res.Stopped = true, r.Reason, StopBusy
			return res, nil
		case r.Claimed < int64(d.Batch):
			res.Stopped = StopCaughtUp
			return res, nil
		}
	}
}

// Options configure a whole tick.
type Options struct {
	Workers    []string
	Batch      int
	Budget     time.Duration // time budget for the worker runs (0: none)
	MaxBatches int           // per worker (0: none)
	SkipStale  bool          // do not run fn_queue_stale_check
	SkipReap   bool          // do not run fn_job_reap_expired_leases
	Observe    func(worker string, r store.WorkerRun, d time.Duration, err error)
}

// Summary is the one JSON object `iu-runner tick` prints.
type Summary struct {
	OK         bool            `json:"ok"`
	Database   string          `json:"database,omitempty"`
	Workers    []WorkerResult  `json:"workers"`
	Claimed    int64           `json:"claimed"`
	StaleCheck json.RawMessage `json:"stale_check,omitempty"`
	Reaper     json.RawMessage `json:"reaper,omitempty"`
	DurationMS int64           `json:"duration_ms"`
	Errors     []string        `json:"errors,omitempty"`
}

// Run does one full pass. A non-nil error means at least one call failed; the summary
// still says what was done.
func Run(ctx context.Context, db DB, o Options) (Summary, error) {
	start := time.Now()
	s := Summary{Workers: []WorkerResult{}}
	var errs []error
	d := Drain{Batch: o.Batch, MaxBatches: o.MaxBatches, Observe: o.Observe}
	if o.Budget > 0 {
		d.Deadline = start.Add(o.Budget)
	}
	for _, w := range o.Workers {
		r, err := DrainWorker(ctx, db, w, d)
		s.Workers = append(s.Workers, r)
		s.Claimed += r.Claimed
		if err != nil {
			errs = append(errs, err)
		}
	}
	if !o.SkipStale {
		raw, err := db.StaleCheck(ctx)
		if err != nil {
			errs = append(errs, err)
		}
		s.StaleCheck = raw
	}
	if !o.SkipReap {
		raw, err := db.ReapLeases(ctx)
		if err != nil {
			errs = append(errs, err)
		}
		s.Reaper = raw
	}
	for _, e := range errs {
		s.Errors = append(s.Errors, e.Error())
	}
	s.OK = len(errs) == 0
	s.DurationMS = time.Since(start).Milliseconds()
	return s, errors.Join(errs...)
}
