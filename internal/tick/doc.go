// Package tick is one pass of the runner: what `iu-runner tick` does once under cron, and
// what `iu-runner run` does on every wake-up.
//
// The workers are served round-robin (RoundRobin): one batch of each worker in turn,
// round after round, so a worker with a long backlog delays the others by one batch per
// round and never starves them. Each batch is one call:
//
//	run fn_iu_route_worker_run(worker, batch)
//	  ├─ claimed == batch (a full batch)  → the worker stays in the rotation (the log has more)
//	  ├─ claimed <  batch                 → caught up: out of the rotation
//	  ├─ gated                            → the gates are closed: a clean no-op, out
//	  ├─ busy                             → another runner holds this worker: out
//	  ├─ error                            → recorded, out (the others go on)
//	  └─ the budget (time, or batches per worker) is spent → out; the next tick continues
//
// until no worker is left in the rotation. Every worker gets its first batch even when
// the time budget is already spent, so a tick always reports gated or busy.
//
// Then (tick only; the service runs them on their own cadence) fn_queue_stale_check() and
// fn_job_reap_expired_leases(), then fn_job_prune() when the DB is a Pruner (the store is).
// Each call is its own transaction, so a pass interrupted between calls leaves nothing half
// done: the worker's cursor moves only with its attempts.
//
// Deadlines: with a time budget the worker runs' context ends one call timeout
// (Options.CallTimeout) after the budget, on top of the store's per-call deadline.
// A stop signal (Options.Stop: SIGINT/SIGTERM under cron) lets the call in flight finish,
// starts no new batch, skips the housekeeping calls and is not a failure (the summary says
// "interrupted": true).
//
// No file lock is needed around a tick: the worker takes a per-worker row lock and a second
// concurrent run returns busy at once, so overlapping cron ticks are harmless.
package tick
