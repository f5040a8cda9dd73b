CREATE OR REPLACE FUNCTION public.fn_iu_route_worker_reset_cursor(p_worker_name text)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- The wait for a run in progress is bounded: a run takes at most a statement timeout, and a
-- session that holds the worker's lock longer is named in the refusal instead of waited on.
SET lock_timeout = '5s'
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_reset_cursor(p_worker_name) -> jsonb
    -- Moves the cursor back to the start of the stream and re-anchors it in this cluster
    -- (the fix for IU002). The next runs re-scan the domain; idempotency keys keep that
    -- duplicate-free. Waits for a run in progress (runs are short; fn_iu_route_worker_lock),
    -- so a reset never interleaves with one; at most 5 s (lock_timeout), then 55P03 naming
    -- the session that holds the worker's lock.
    -- ---------------------------------------------------------------------------------------
DECLARE
    c       public.iu_route_worker_cursor%ROWTYPE;
    v_sysid bigint;
    v_actor text;
BEGIN
    v_sysid := (SELECT s.system_identifier FROM pg_control_system() s);
    v_actor := iu_core.fn_queue_actor(NULL, 'fn_iu_route_worker_reset_cursor');
    PERFORM iu_core.fn_iu_route_worker_require_name('fn_iu_route_worker_reset_cursor', p_worker_name);
    BEGIN
        PERFORM iu_core.fn_iu_route_worker_lock('fn_iu_route_worker_reset_cursor', p_worker_name, true);
    EXCEPTION WHEN lock_not_available THEN
        RAISE EXCEPTION 'fn_iu_route_worker_reset_cursor: worker % is held by another session for more than 5 s: %',
            quote_literal(p_worker_name),
            iu_core.fn_iu_route_worker_lock_holders((SELECT cur.lock_id FROM public.iu_route_worker_cursor cur
                                                      WHERE cur.worker_name = p_worker_name))
            USING ERRCODE = '55P03',
                  HINT = 'A run finishes within its statement timeout; a session that holds the lock longer (idle in transaction, or one that took pg_advisory_lock) is ended with SELECT pg_terminate_backend(<pid>); then reset again.';
    END;
    SELECT * INTO c FROM public.iu_route_worker_cursor cur WHERE cur.worker_name = p_worker_name;

    UPDATE public.iu_route_worker_cursor cur
       SET done_snapshot = NULL, window_snapshot = NULL, window_txid = NULL, window_event_id = NULL,
           last_created_at = NULL, last_event_id = NULL,
           system_identifier = v_sysid, reset_at = now(), reset_by = v_actor
     WHERE cur.worker_name = p_worker_name;

    RETURN jsonb_build_object(
        'worker', p_worker_name,
        'reset', true,
        'cursor', 'start_of_stream',
        'system_identifier', v_sysid::text,
        'previous', jsonb_build_object('done_snapshot', c.done_snapshot::text,
                                       'window_snapshot', c.window_snapshot::text,
                                       'last_created_at', c.last_created_at,
                                       'last_event_id', c.last_event_id,
                                       'system_identifier', c.system_identifier::text),
        'reset_by', v_actor,
        'note', 'the next runs re-scan the domain; idempotency keys keep them duplicate-free');
END;
$$;
