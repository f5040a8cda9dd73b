// Package store is the runner's only door to PostgreSQL: one method per SQL function the
// runner calls, each a single autocommit statement, so every call is exactly the
// transaction the SQL function defines and nothing is ever left half done on the
// runner's side.
//
//	RunWorker     SELECT fn_iu_route_worker_run($worker, $batch)      -> WorkerRun
//	StaleCheck    SELECT fn_queue_stale_check()                        -> StaleCheck
//	ReapLeases    SELECT fn_job_reap_expired_leases()                  -> Reap
//	PruneJobs     SELECT fn_job_prune()                                -> raw jsonb (passed through, not read)
//	MaintainPartitions SELECT fn_iu_partition_maintain()               -> PartitionMaintenance
//	RunRetention  SELECT fn_iu_retention_run(false)                    -> RetentionRun
//	QueueHealth   SELECT * FROM v_queue_health                         -> []QueueHealthRow
//	RunnerBeat    SELECT fn_queue_runner_beat($id, $instance, $status, $m, $release) -> RunnerBeat
//	Ping          SELECT 1
//	DatabaseName  SELECT current_database()
//
// The SQL is the source of truth; what it returns is typed here, one struct per document
// (worker_run.go, stale_check.go, reap.go, queue_health.go), and the contract test runs
// the real SQL against those structs (see contract.go for the rules). Each typed result
// also keeps the document as the SQL returned it (Raw), which the tick summary prints.
package store
