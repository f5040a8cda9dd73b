// Package service is `iu-runner run`: the long-running loop that keeps route workers
// caught up, beats the runner's own heartbeat, runs the stale-check and the lease reaper
// on their cadence, and serves /metrics, /healthz and /readyz.
//
// # Modes (after the dual-channel worker design: push plus fallback poll)
//
//	poll    no LISTEN at all; a pass every --poll-interval (±10% jitter). For PgBouncer in
//	        transaction pooling mode, where a session-level LISTEN does not work.
//	notify  woken by NOTIFY on queue_wake_<domain>; polls only while the listener is down,
//	        plus one safety pass per --stale-check-interval, so a lost notification (or a
//	        bridge switched off) delays work by that much at most and never strands it.
//	hybrid  (default) NOTIFY for latency plus the fallback poll, which catches anything a
//	        lost notification would otherwise leave waiting until the next event.
//
// # The loop
//
//	                   ┌──────────────────────── wake: notify | reconnect ───────────┐
//	                   │                          poll timer | retry timer            │
//	                   ▼                                                              │
//	start ──► ┌──────────────┐  claimed == batch   ┌──────────────┐                  │
//	          │     PASS     │ ──────────────────► │  PASS again  │ (wake full_batch,│
//	          │ workers in   │ ◄────────────────── │  at once     │  never a sleep)  │
//	          │ turn: fn_iu_ │                     └──────────────┘                  │
//	          │ route_worker_│                                                        │
//	          │ run          │                                                        │
//	          └──────┬───────┘                                                        │
//	                 │ caught up / gated / busy / error (error → retry 250ms…30s ±20%)│
//	                 ▼                                                                │
//	          ┌──────────────┐ heartbeat fn_queue_runner_beat  (≤ every min(poll,10s))│
//	          │ HOUSEKEEPING │ stale-check, partition maintenance, v_queue_health     │
//	          │              │ gauges (--stale-check-interval), retention (--retention-│
//	          │              │ interval, off by default), lease reaper (--reap-int.)  │
//	          └──────┬───────┘                                                        │
//	                 ▼                                                                │
//	          ┌──────────────┐ ───────────────────────────────────────────────────────┘
//	          │     WAIT     │
//	          └──────┬───────┘
//	                 │ SIGINT / SIGTERM
//	                 ▼
//	          ┌──────────────┐ /readyz → 503, no new batch starts; the call in flight
//	          │   DRAINING   │ finishes, or is cancelled (a cancel request; the server rolls
//	          └──────┬───────┘ its transaction back) when --shutdown-grace runs out; a
//	                 │         second SIGINT/SIGTERM ends the process at once
//	                 ▼
//	              STOPPED (exit 0)
//
// Wake-ups coalesce: one pending wake-up is enough, so any number of them arriving while
// a pass runs costs one more pass, and the notifier turns a burst of NOTIFYs into one
// wake-up (it drains the burst first; see package notifier). iu_runner_notifications_total
// against iu_runner_wakeups_total{source="notify"} shows the coalescing.
//
// A pass serves the workers round-robin (tick.RoundRobin): one batch of each in turn, so a
// worker with a long backlog never starves the others. A pass is bounded (--pass-budget):
// a long backlog is drained in consecutive passes, so the heartbeat and the stale-check
// keep their cadence under load.
//
// # The runner's own heartbeat
//
// With --executor-id, the loop writes fn_queue_runner_beat at most every
// min(--poll-interval, 10s) (not on every pass under load), with status ok after a good
// pass, warn after a failed one and error after three failed in a row; the metadata then
// carries last_error (at most 200 characters) and failed_passes — keys that pass the
// payload-hygiene check.
//
// The row is the runner's own: bound to its login, and held by one runner process at a
// time (an instance uuid drawn at start, renewed by every beat, handed back when the loop
// stops). No other executor may beat it. A second runner with the same --executor-id is
// told the row is held (by which process, login, pid and host) and runs as its standby:
// it works as usual but beats nothing, logs that once at WARN, exports
// iu_runner_heartbeat_standby 1, and takes the row over when the holder hands it back or
// has not beaten for 30 s. So the default id, iu-runner:<host>, is shared by nothing live,
// and a restarted runner takes its own row back instead of leaving one that goes stale.
//
// # Stale-check cadence
//
// --stale-check-interval must be under half the smallest heartbeat stale threshold in
// v_queue_health (exactly half is too long). When it is not, the loop warns once and
// iu_runner_stale_check_interval_too_long is 1.
//
// # History partitions
//
// fn_iu_partition_maintain runs on the stale-check cadence and, with --retention-interval,
// fn_iu_retention_run(false) on its own. Neither waits long for a lock: one that could not
// take its lock answers busy (the partition-maintenance lock is held elsewhere) or
// lock_timeout (the history tables' locks were not free) and changes nothing. These are
// answers, not errors, so the loop says so itself: a WARN line naming the holder (pid,
// login; for lock_timeout the first session that held a table's lock), and
// iu_runner_partition_maintenance_total / iu_runner_retention_runs_total by outcome
// (LogMaintenance, LogRetention; `tick` logs the same lines). Rows left in a default
// partition are a WARN too; iu_runner_partition_default_rows and
// iu_runner_partition_ahead_txids export the last call's figures.
//
// # Failures
//
// Every database call is its own transaction, bounded by a client-side deadline (the call
// timeout: statement timeout + 5s), so a half-open connection fails the call instead of
// hanging the loop. A failed pass is counted in iu_runner_db_errors_total and retried on
// an exponential backoff: 250ms, doubling to 30s, each wait spread ±20% so a fleet that
// lost the database together does not retry in step (Config.RetryMin, RetryMax). While a
// retry is pending the poll does not start passes of its own (a wake-up still does: the
// listener's reconnection means the database is back).
//
// A failure that says the database did not answer (Unavailable: no connection, a broken or
// timed-out one, a server shutting down, starting up or full) opens an outage. During an
// outage the loop calls the database only on the retry backoff (the pass, then the
// heartbeat when due, which reports the failing passes if it gets through); the
// stale-check, the health gauges, the reaper and partition maintenance wait for the
// database. The log carries the first failure in full, then at most one summary line per
// backoff step ("database still unreachable", with failures and suppressed: how many
// failures it did not log; /readyz's failures included), and one INFO line when a call
// succeeds again ("database reachable again", with the outage's length and its failure
// count); the listener is then told to reconnect at once instead of sitting out its own
// backoff. An error the server answered with (a SQL error, a statement timeout) is no
// outage: it is logged as it comes ("pass failed; retrying", "database call failed"), still
// on the retry backoff. The pool replaces broken connections on its own, the notifier
// re-LISTENs on its own (250ms doubling to 30s) and its reconnection is itself a wake-up.
// NOTIFY is only a hint: a missed one delays work by at most one poll interval (hybrid)
// and never loses it.
//
// # Endpoints
//
//	/metrics  Prometheus (package metrics), the iu_queue_health_* gauges included: a
//	          refresh builds the new set and swaps it in, so a scrape never sees an empty one
//	/healthz  200 while the loop goes round (it reports progress at least every
//	          --stale-check-interval); 503 when it has stalled or stopped
//	/readyz   200 when the database answers SELECT 1 within 2s; 503 when it does not, and
//	          from the stop signal on (draining). The body is a short status; the database
//	          error itself is logged, never sent to the client. Concurrent requests share
//	          one ping and a result answers for a second, so /readyz never holds more than
//	          one of the pool's connections, however often it is asked.
//
// The port is open to whoever can reach it, so every phase of a connection is bounded
// (HTTPLimits: headers 5s, the whole request 10s, the response 10s, keep-alive idle 30s)
// and at most 64 connections are served at once; more wait in the kernel's accept queue.
package service
