CREATE OR REPLACE FUNCTION iu_core.fn_queue_notify_bridge_sync()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
    -- fn_queue_notify_bridge_sync: an AFTER statement trigger on dot_config (any INSERT, UPDATE,
    -- DELETE or TRUNCATE; the table is small and rarely written) that makes the bridge's two
    -- triggers present exactly when fn_queue_notify_enabled() is true:
    --   open   and a trigger is missing -> CREATE TRIGGER (statement level, REFERENCING NEW
    --          TABLE: allowed on a partitioned table's root too);
    --   closed and a trigger is present -> DROP TRIGGER;
    --   otherwise nothing (no DDL, no lock: the other gates and settings change freely).
    -- SECURITY DEFINER: the DDL runs as the package owner, who owns both tables, whoever wrote
    -- dot_config (today only the owner and superusers may); its search_path is pinned to
    -- pg_catalog, pg_temp and it names the tables and the gate by their schema. CREATE and
    -- DROP TRIGGER lock the table against inserts until the flip commits, so the wait for that
    -- lock is bounded (lock_timeout 5 s): behind a long transaction on the outbox the flip
    -- fails with 55P03 and a HINT instead of stalling every producer queued behind it.
DECLARE
    v_open boolean := public.fn_queue_notify_enabled();
    v_has_event boolean;
    v_has_job boolean;
BEGIN
    SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
                    WHERE t.tgrelid = 'public.event_outbox'::pg_catalog.regclass AND t.tgname = 'trg_event_outbox_wake_notify'),
           EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
                    WHERE t.tgrelid = 'public.job_queue'::pg_catalog.regclass AND t.tgname = 'trg_job_queue_wake_notify')
      INTO v_has_event, v_has_job;
    BEGIN
        IF v_open AND NOT v_has_event THEN
            CREATE TRIGGER trg_event_outbox_wake_notify
                AFTER INSERT ON public.event_outbox
                REFERENCING NEW TABLE AS new_rows
                FOR EACH STATEMENT EXECUTE FUNCTION iu_core.fn_queue_wake_notify_event_outbox();
        ELSIF NOT v_open AND v_has_event THEN
            DROP TRIGGER trg_event_outbox_wake_notify ON public.event_outbox;
        END IF;
        IF v_open AND NOT v_has_job THEN
            CREATE TRIGGER trg_job_queue_wake_notify
                AFTER INSERT ON public.job_queue
                REFERENCING NEW TABLE AS new_rows
                FOR EACH STATEMENT EXECUTE FUNCTION iu_core.fn_queue_wake_notify_job_queue();
        ELSIF NOT v_open AND v_has_job THEN
            DROP TRIGGER trg_job_queue_wake_notify ON public.job_queue;
        END IF;
    EXCEPTION WHEN lock_not_available THEN
        RAISE EXCEPTION 'fn_queue_notify_bridge_sync: the NOTIFY bridge gate could not be % within 5 s: a transaction holds event_outbox or job_queue',
            CASE WHEN v_open THEN 'opened' ELSE 'closed' END
            USING ERRCODE = '55P03',
                  HINT = 'Retry the dot_config change; pg_locks shows which session holds the table.';
    END;
    RETURN NULL;
END;
$$;
