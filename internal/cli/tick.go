package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/iu-core/event-worker/internal/service"
	"github.com/iu-core/event-worker/internal/store"
	"github.com/iu-core/event-worker/internal/tick"
)

func runTick(ctx context.Context, args []string, env Env) int {
	fs := flag.NewFlagSet("tick", flag.ContinueOnError)
	var c common
	c.register(fs, "warn", true)
	var workers stringList
	fs.Var(&workers, "worker", "route worker to run (repeatable or comma-separated; default "+DefaultWorker+")")
	batch := fs.Int("batch", DefaultBatch, "events per fn_iu_route_worker_run call (at least 1; the bound is fn_iu_route_worker_batch_limits())")
	budget := fs.Duration("budget", 50*time.Second, "time budget for the worker runs; the next tick continues (0: none)")
	maxBatches := fs.Int("max-batches", 0, "batch budget per worker (0: none)")
	skipStale := fs.Bool("skip-stale-check", false, "do not run fn_queue_stale_check()")
	skipReap := fs.Bool("skip-reap", false, "do not run fn_job_reap_expired_leases() nor fn_job_prune() (both need workflow_admin)")
	skipPartitions := fs.Bool("skip-partitions", false, "do not run fn_iu_partition_maintain() (history partitions ahead)")
	retention := fs.Bool("retention", false, "also run fn_iu_retention_run(false) after the partition maintenance (needs workflow_admin)")
	executorID := fs.String("executor-id", "", "also beat this runner's own heartbeat row (fn_queue_runner_beat: bound to the runner's login; refused while a live runner holds it)")
	synopsis := "iu-runner tick [flags]\n\n" +
		"One pass for cron: for each worker, run batches until one comes back short (caught up),\n" +
		"the worker is gated or busy, or the budget is spent; then the stale-check, the history\n" +
		"partition maintenance (and, with --retention, retention) and the lease reaper. Prints\n" +
		"one JSON summary on stdout. Exit 0\n" +
		"on success (gated and busy included),\n" +
		"1 on failure, 2 on a usage error. No lock file needed: a concurrent run returns busy.\n" +
		"Several --worker are served round-robin: one batch of each in turn.\n" +
		"SIGINT/SIGTERM: the call in flight finishes, no new batch starts, the stale-check and\n" +
		"the reaper are skipped; the summary says \"interrupted\": true and the exit is 0 unless a\n" +
		"call failed (a second signal exits at once). Each call has a client-side deadline\n" +
		"(--call-timeout); the worker runs as a whole end by --budget plus one call timeout."
	if code, done := parse(fs, args, env, synopsis); done {
		return code
	}
	c.db.Parsed(fs)
	if fs.NArg() > 0 {
		return usageErr(env, "tick", "unexpected argument %q", fs.Arg(0))
	}
	if *batch < 1 {
		return usageErr(env, "tick", "--batch %d: want at least 1", *batch)
	}
	if *budget < 0 || *maxBatches < 0 {
		return usageErr(env, "tick", "--budget and --max-batches must not be negative")
	}
	if err := c.db.Validate(); err != nil {
		return usageErr(env, "tick", "%v", err)
	}
	log, err := c.logger(env)
	if err != nil {
		return usageErr(env, "tick", "%v", err)
	}
	if len(workers) == 0 {
		workers = stringList{DefaultWorker}
	}

	pool, st, err := c.connect(ctx, env, log)
	if err != nil {
		// still one JSON line, so a log shipper reading stdout sees every tick
		_ = json.NewEncoder(env.Stdout).Encode(tick.Summary{Workers: []tick.WorkerResult{}, Errors: []string{err.Error()}})
		return fail(env, "tick", err)
	}
	defer pool.Close()
	if err := checkBatch(ctx, st, "tick", *batch); err != nil {
		if errors.Is(err, store.ErrCall) {
			_ = json.NewEncoder(env.Stdout).Encode(tick.Summary{Workers: []tick.WorkerResult{}, Errors: []string{err.Error()}})
			return fail(env, "tick", err)
		}
		return usageErr(env, "tick", "%v", err)
	}
	// The calls run on a context the signal does not cancel (the call in flight finishes,
	// bounded by its call timeout); the signal stops the tick between calls.
	work := context.WithoutCancel(ctx)
	s, runErr := tick.Run(work, st, tick.Options{
		Workers: workers, Batch: *batch, Budget: *budget, MaxBatches: *maxBatches,
		SkipStale: *skipStale, SkipReap: *skipReap, SkipPartitions: *skipPartitions, Retention: *retention,
		CallTimeout: st.CallTimeout, Stop: ctx,
		Maintained: func(res store.PartitionMaintenance) { service.LogMaintenance(log, res) },
		Retained:   func(res store.RetentionRun) { service.LogRetention(log, res) },
		Observe: func(w string, r store.WorkerRun, d time.Duration, err error) {
			if err == nil {
				log.Debug("worker run", "worker", w, "claimed", r.Claimed, "gated", r.Gated, "busy", r.Busy, "ms", d.Milliseconds())
				if suspect, names := service.BusyHolders(r); r.Busy && suspect {
					log.Warn("worker busy: a session holds its lock and no run can take it", "worker", w, "held_by", names,
						"runbook", "runbooks/route-worker-held-back-or-busy.md#busy-true")
				}
			}
		},
	})
	if ctx.Err() == nil {
		if name, err := st.DatabaseName(work); err == nil {
			s.Database = name
		}
	}
	if *executorID != "" && runErr == nil && ctx.Err() == nil {
		// One beat, handed back at once: the next tick (another process) beats the same row.
		host, _ := os.Hostname()
		res, err := st.RunnerBeat(work, *executorID, service.NewInstance(), "ok",
			map[string]any{"runner": "iu-runner", "mode": "tick", "claimed": s.Claimed, "pid": os.Getpid(), "host": host}, true)
		if err == nil && res.Held {
			err = heldError(*executorID, res.HeldBy)
		}
		if err != nil {
			s.OK = false
			s.Errors = append(s.Errors, err.Error())
			runErr = err
		}
	}
	if len(s.StaleCheck) > 0 {
		if sc, err := store.ParseStaleCheck(s.StaleCheck); err == nil {
			service.LogContended(log, sc)
		}
	}
	if s.Interrupted {
		log.Warn("tick interrupted by a stop signal: no new batch started, housekeeping skipped", "claimed", s.Claimed)
	}
	enc := json.NewEncoder(env.Stdout)
	if err := enc.Encode(s); err != nil {
		return fail(env, "tick", err)
	}
	if runErr != nil {
		return fail(env, "tick", runErr)
	}
	return ExitOK
}

// heldError says that a live runner holds the heartbeat row a tick was to beat: a tick
// beats once and hands the row back, so it never waits for one; it fails, naming the
// holder, because two runners sharing an id hide each other's silence.
func heldError(id string, h *store.RunnerHolder) error {
	if h == nil {
		return fmt.Errorf("--executor-id %q: its heartbeat row is held by another live runner: give this tick its own --executor-id", id)
	}
	who := fmt.Sprintf("instance %s, login %s", h.Instance, h.SessionUser)
	if h.PID != nil {
		who += fmt.Sprintf(", pid %d", *h.PID)
	}
	if h.Host != nil {
		who += ", host " + *h.Host
	}
	return fmt.Errorf("--executor-id %q: its heartbeat row is held by another live runner (%s; free at %s if it stops beating): give this tick its own --executor-id",
		id, who, h.FreeAt.UTC().Format(time.RFC3339))
}
