CREATE OR REPLACE FUNCTION iu_core.fn_queue_heartbeat_require_room(p_caller text, p_executor_id text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
-- The bound on executors that executors create themselves: a beat may create executor
-- p_executor_id only while fewer than iu_core.fn_queue_heartbeat_self_registered_limit()
-- rows were created that way (registered_via tick or runner); P0002 otherwise, with the
-- register call that creates it as an operator. Every executor is one more heartbeat row,
-- one more row of v_queue_health and one more metric series: an executor that creates them
-- by the thousand must not be able to.
DECLARE
    v_limit integer := iu_core.fn_queue_heartbeat_self_registered_limit();
    v_n     bigint;
BEGIN
    SELECT count(*) INTO v_n FROM public.queue_heartbeat h WHERE h.registered_via IN ('tick', 'runner');
    IF v_n >= v_limit THEN
        RAISE EXCEPTION '%: executor % is not registered, and executors have created % executors themselves (the limit, queue.heartbeat.self_registered_limit, is %)',
            p_caller, quote_literal(p_executor_id), v_n, v_limit
            USING ERRCODE = 'P0002',
                  HINT = format('An operator registers it: SELECT fn_queue_heartbeat_register(%L, ''external_worker'', ''{}'', 60, 180, ''me'');', p_executor_id);
    END IF;
END;
$$;
