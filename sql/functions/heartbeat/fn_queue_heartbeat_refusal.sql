CREATE OR REPLACE FUNCTION iu_core.fn_queue_heartbeat_refusal(p_executor_id text)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- The one refusal every caller-facing beat returns (ping, tick, write) for an executor
    -- that only its own work may beat, or NULL when the caller may beat it (the binding is
    -- tested next, on the row). A refusal is JSON, not an exception: the caller sees the
    -- reason, and nothing was written. Only a worker heals itself:
    --   protected_legacy_silent_passive  iu_outbound_default and the configured protected
    --                                    set (queue.heartbeat.protected_executors)
    --   beaten_by_its_route_worker       every route worker's row (a cursor of that name, or
    --                                    a row its run created): only that worker's run beats it
    --   beaten_by_its_runner             every runner's row (fn_queue_runner_beat created it):
    --                                    only that runner beats it
    SELECT CASE WHEN iu_core.fn_queue_heartbeat_is_protected(p_executor_id)
                THEN jsonb_build_object('refused', true, 'reason', 'protected_legacy_silent_passive')
                WHEN EXISTS (SELECT 1 FROM public.iu_route_worker_cursor c WHERE c.worker_name = p_executor_id)
                  OR EXISTS (SELECT 1 FROM public.queue_heartbeat h
                              WHERE h.executor_id = p_executor_id AND h.registered_via = 'route_worker')
                THEN jsonb_build_object('refused', true, 'reason', 'beaten_by_its_route_worker')
                WHEN EXISTS (SELECT 1 FROM public.queue_heartbeat h
                              WHERE h.executor_id = p_executor_id AND h.registered_via = 'runner')
                THEN jsonb_build_object('refused', true, 'reason', 'beaten_by_its_runner') END
$$;
