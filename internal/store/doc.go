// Package store is the runner's only door to PostgreSQL: one method per SQL function the
// runner calls (SPEC sections 4, 5, 7 and 8), each a single autocommit statement, so every
// call is exactly the transaction the SQL function defines and nothing is ever left half
// done on the runner's side.
//
//	RunWorker     SELECT fn_iu_route_worker_run($worker, $batch)      -> WorkerRun
//	StaleCheck    SELECT fn_queue_stale_check()                        -> raw jsonb
//	ReapLeases    SELECT fn_job_reap_expired_leases()                  -> raw jsonb
//	PruneJobs     SELECT fn_job_prune()                                -> raw jsonb
//	Heartbeat     SELECT fn_queue_heartbeat_tick($id, $kind, 'ok', $m) -> raw jsonb
//	Ping          SELECT 1
//	DatabaseName  SELECT current_database()
//
// The SQL is the source of truth; the runner only parses the keys the spec names
// (worker, gated, busy, claimed, attempts_written, dead_lettered, per-status counts) and
// passes everything else through untouched in Raw.
package store
