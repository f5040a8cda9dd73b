CREATE OR REPLACE FUNCTION iu_core.fn_queue_stale_alert_row()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    -- Every heartbeat row gets its alert-state row in the same transaction, whoever created
    -- it (the register, tick and route-worker paths alike), so the stale-check always has
    -- a row to lock. Kept when the heartbeat row goes: the window memory outlives it.
    INSERT INTO public.queue_stale_alert (executor_id) VALUES (NEW.executor_id) ON CONFLICT (executor_id) DO NOTHING;
    RETURN NULL;
END;
$$;
