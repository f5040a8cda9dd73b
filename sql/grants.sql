-- sql/grants.sql: who may call what, in one place.
--
-- Generated into the last migration of the release (014_grants.sql); its Down revokes each.
-- Every function is created with EXECUTE revoked from PUBLIC (the generated migrations do it
-- next to each CREATE), so what is not granted here is callable by nobody but the package
-- owner. The two group roles:
--   dot_executor    executors: run the worker, beat, stale-check, claim and finish jobs
--   workflow_admin  operators: register, activate, replay, reset, ping, reap, read the views
-- A login that holds neither gets 42501 everywhere. Producers that INSERT into event_outbox
-- directly are granted by the DBA (sql/README.md, "Producers"): INSERT on the table's
-- columns and EXECUTE on the row rules its domains call.


-- Producers and both roles: the event log
GRANT EXECUTE ON FUNCTION public.fn_iu_emit_event(text, text, text, text, text, text, text, jsonb)        TO dot_executor, workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_iu_emit_events(text, text, text[], text[], text[], text[], text[], jsonb[]) TO dot_executor, workflow_admin;

-- The gates (fail-closed: open only on the exact value true)
GRANT EXECUTE ON FUNCTION public.fn_iu_core_routes_enabled()                                              TO dot_executor, workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_iu_route_worker_enabled()                                             TO dot_executor, workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_iu_gate_open(text)                                                    TO dot_executor, workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_queue_notify_enabled()                                                TO dot_executor, workflow_admin;

-- The route worker
GRANT EXECUTE ON FUNCTION public.fn_iu_route_worker_run(text, integer)                                    TO dot_executor, workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_iu_route_worker_batch_limits()                                       TO dot_executor, workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_iu_route_worker_register(text, text)                                  TO workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_iu_route_worker_reset_cursor(text)                                    TO workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_iu_route_worker_health(text)                                          TO workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_iu_route_dead_letter_replay(uuid)                                     TO workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_iu_route_dead_letter_replay_many(jsonb, integer)                      TO workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_iu_event_outbox_rebase_foreign_txids()                                TO workflow_admin;
GRANT SELECT ON public.v_iu_route_worker_status, public.v_iu_route_dead_letter_open, public.v_iu_route_attempt_summary TO workflow_admin;

-- Route-worker groups: members are run with fn_iu_route_worker_run (above)
GRANT EXECUTE ON FUNCTION public.fn_iu_route_worker_register_member(text, text, text, integer)            TO workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_iu_route_worker_remove_member(text, text)                             TO workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_iu_route_group_health(text)                                           TO workflow_admin;

-- Heartbeats and the stale-check
GRANT EXECUTE ON FUNCTION public.fn_queue_heartbeat_write(text, jsonb, text)                              TO dot_executor;
GRANT EXECUTE ON FUNCTION public.fn_queue_heartbeat_tick(text, text, text, jsonb)                         TO dot_executor;
GRANT EXECUTE ON FUNCTION public.fn_queue_runner_beat(text, uuid, text, jsonb, boolean)                   TO dot_executor;
GRANT EXECUTE ON FUNCTION public.fn_queue_stale_check()                                                   TO dot_executor;
GRANT EXECUTE ON FUNCTION public.fn_queue_heartbeat_register(text, text, text[], integer, integer, text, text) TO workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_queue_heartbeat_pause(text, text, text)                               TO workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_queue_heartbeat_resume(text, text)                                    TO workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_cut_heartbeat_ping(text, text, text, jsonb)                           TO workflow_admin;

-- The job queue: executors work jobs, operators do what changes what every executor sees
GRANT EXECUTE ON FUNCTION public.fn_job_enqueue(text, text, jsonb, timestamptz, text, integer)            TO dot_executor;
GRANT EXECUTE ON FUNCTION public.fn_job_enqueue_many(text, text, jsonb, timestamptz, text[], integer)     TO dot_executor;
GRANT EXECUTE ON FUNCTION public.fn_job_claim(text, text[], integer, integer)                             TO dot_executor;
GRANT EXECUTE ON FUNCTION public.fn_job_extend_lease(uuid, text, uuid, integer)                           TO dot_executor;
GRANT EXECUTE ON FUNCTION public.fn_job_complete(uuid, text, uuid)                                        TO dot_executor;
GRANT EXECUTE ON FUNCTION public.fn_job_complete(uuid, text)                                              TO dot_executor;
GRANT EXECUTE ON FUNCTION public.fn_job_complete_many(text, uuid[], uuid[])                               TO dot_executor;
GRANT EXECUTE ON FUNCTION public.fn_job_fail(uuid, text, text, uuid)                                      TO dot_executor;
GRANT EXECUTE ON FUNCTION public.fn_job_fail(uuid, text, text)                                            TO dot_executor;
GRANT EXECUTE ON FUNCTION public.fn_job_fail_many(text, uuid[], uuid[], text[])                           TO dot_executor;
GRANT EXECUTE ON FUNCTION public.fn_job_reap_expired_leases()                                             TO workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_job_prune(integer)                                                    TO workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_job_kind_pause(text, text, text)                                      TO workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_job_kind_resume(text, text)                                           TO workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_job_dead_letter_replay(uuid, text)                                    TO workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_job_dead_letter_resolve(uuid, text, text)                             TO workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_job_dead_letter_replay_many(jsonb, integer)                           TO workflow_admin;

-- History partitions and retention
GRANT EXECUTE ON FUNCTION public.fn_iu_partition_maintain()                                               TO dot_executor, workflow_admin;
GRANT EXECUTE ON FUNCTION public.fn_iu_retention_run(boolean)                                             TO workflow_admin;
GRANT SELECT ON public.iu_history_partition, public.iu_retention_ledger                                   TO workflow_admin;

-- The single pane
GRANT SELECT ON public.v_queue_health                                                                     TO workflow_admin;

-- Internals that views call. A view checks EXECUTE on what it calls against its reader, and
-- an inlined SQL function needs it too; the reader still cannot name them (no USAGE on iu_core).
GRANT EXECUTE ON FUNCTION iu_core.fn_iu_route_worker_pending(text, iu_core.iu_route_window)                        TO workflow_admin;
GRANT EXECUTE ON FUNCTION iu_core.fn_iu_route_worker_cursor_problem(public.iu_route_worker_cursor)        TO workflow_admin;
GRANT EXECUTE ON FUNCTION iu_core.fn_iu_route_worker_foreign_txids(text)                                  TO workflow_admin;
GRANT EXECUTE ON FUNCTION iu_core.fn_iu_route_worker_lock_holders(integer)                                TO workflow_admin;
GRANT EXECUTE ON FUNCTION iu_core.fn_queue_heartbeat_floor_seconds()                                      TO workflow_admin;
GRANT EXECUTE ON FUNCTION iu_core.fn_queue_heartbeat_is_stale(timestamptz, integer, integer, timestamptz) TO workflow_admin;
GRANT EXECUTE ON FUNCTION iu_core.fn_queue_heartbeat_gap_ratio(timestamptz, integer, timestamptz)         TO workflow_admin;
GRANT EXECUTE ON FUNCTION iu_core.fn_queue_heartbeat_severity(numeric)                                    TO workflow_admin;
GRANT EXECUTE ON FUNCTION iu_core.fn_iu_history_health()                                                TO workflow_admin;
