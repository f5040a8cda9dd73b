// Package metrics defines iu-runner's Prometheus metrics on a registry of its own (no
// global default registry), served by the run command on /metrics.
//
// Runner activity (counters and histograms, labelled by worker where it applies):
//
//	iu_runner_events_routed_total{worker,status}    attempts by status (dry_run, disabled, skipped, failed, sent)
//	iu_runner_dead_letters_total{worker}            events dead-lettered by the runner's passes
//	iu_runner_worker_runs_total{worker,outcome}     fn_iu_route_worker_run calls: ok, gated, busy, error
//	iu_runner_run_duration_seconds{worker}          duration of one fn_iu_route_worker_run call
//	iu_runner_wakeups_total{source}                 why the loop woke: notify, poll, full_batch, reconnect, retry, startup
//	iu_runner_notifications_total                   NOTIFYs received on queue_wake_*: a burst drains into one notify wake-up
//	iu_runner_db_errors_total{op}                   failed database calls by operation
//	iu_runner_listener_up                           1 while the LISTEN connection is healthy, 0 while polling only
//	iu_runner_listener_reconnects_total             LISTEN connection (re)establishments after a loss
//	iu_runner_draining                              1 after SIGINT/SIGTERM, while the current pass finishes
//	iu_runner_last_pass_timestamp_seconds           unix time of the last completed pass
//	iu_runner_mode{mode}                            1 for the --mode in use (poll, notify, hybrid)
//	iu_runner_stale_check_interval_too_long         1 when --stale-check-interval >= half the smallest stale threshold
//	iu_runner_build_info{version,revision,goversion,modified}   always 1: which build runs
//
// The single pane, v_queue_health, mirrored as gauges (refreshed on the stale-check cadence;
// rows that disappear from the view disappear from the gauges). A refresh builds the whole
// new set first and then swaps it in (Metrics.SetHealth), so a scrape never sees an empty
// or half-built set. Every replica reports the same database-wide values: aggregate them
// with max (never sum) across replicas, as deploy/prometheus/iu-runner.rules.yml does:
//
//	iu_queue_health_age_seconds{source,subject,domain}
//	iu_queue_health_backlog{source,subject,domain}
//	iu_queue_health_open_dead_letters{source,subject,domain}
//	iu_queue_health_stale_executors
//	iu_queue_health_problem{source,subject,domain,status_hint}   1 per problem row (iu-runner health's verdict)
//	iu_queue_health_executor_stale{executor}                     1 per stale executor (its id as a label)
//	iu_queue_health_executor_error{executor}                     1 per executor beating on time with status error
//	iu_queue_health_last_refresh_timestamp_seconds               when the figures were last read
//
// The last-refresh gauge is part of the snapshot: it is absent until a refresh succeeds,
// and while the database is unreachable it stays at the time of the last good read, so
// frozen figures say how old they are (alerts: IuQueueHealthFiguresStale).
//
// Go runtime and process collectors are registered too (process_resident_memory_bytes...).
package metrics
