CREATE OR REPLACE FUNCTION iu_core.fn_dot_config_hc_beat()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- Trigger on dot_config (created when an adopted database had hc_executor_last_run): the
    -- first generation's hc executor records each tick in that key (DP4: "the working pattern
    -- DP4 generalises"); each write beats the hc_executor heartbeat row, so the executor is
    -- watched by the stale-check like any other while its writer stays as it is. Touches one
    -- queue_heartbeat row.
BEGIN
    UPDATE public.queue_heartbeat
       -- now(): the moment of this write (NEW.updated_at moves only when the value changes,
       -- fn_dot_config_touch; a writer that rewrites the same non-timestamp value still beats)
       SET last_beat_at = iu_core.fn_dot_config_hc_beat_at(NEW.value, now()),
           ticks_total = ticks_total + 1,
           status = 'ok',
           last_beat_payload = pg_catalog.jsonb_build_object('source', 'dot_config.hc_executor_last_run'),
           last_beat_by = 'dot_config', last_beat_session_user = session_user
     WHERE executor_id = 'hc_executor';
    RETURN NULL;
END;
$$;
