// Package tick is one pass of the runner: what `iu-runner tick` does once under cron, and
// what `iu-runner run` does on every wake-up.
//
// For each worker, in the order given:
//
//	run fn_iu_route_worker_run(worker, batch)
//	  ├─ claimed == batch (a full batch)  → run again at once (the log has more)
//	  ├─ claimed <  batch                 → caught up: next worker
//	  ├─ gated                            → the gates are closed: a clean no-op, next worker
//	  ├─ busy                             → another runner holds this worker: next worker
//	  ├─ the budget (time or batches) is spent → stop; the next tick continues
//	  └─ error                            → record it, next worker
//
// then (tick only; the service runs them on their own cadence) fn_queue_stale_check() and
// fn_job_reap_expired_leases(). Each call is its own transaction, so a pass interrupted
// between calls leaves nothing half done: the worker's cursor moves only with its attempts.
//
// No file lock is needed around a tick: the worker takes a per-worker row lock and a second
// concurrent run returns busy at once, so overlapping cron ticks are harmless.
package tick
