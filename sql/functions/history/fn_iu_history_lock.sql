CREATE OR REPLACE FUNCTION iu_core.fn_iu_history_lock(p_wait_ms integer)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET lock_timeout = 0
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_history_lock(p_wait_ms) -> boolean: takes the partition-maintenance lock, SHARE
    -- UPDATE EXCLUSIVE on iu_core.iu_history_lock, until the caller's transaction ends.
    -- p_wait_ms 0: at once or not at all; otherwise waits at most that long (maintenance 1 s,
    -- retention 2 s, then they answer busy). False when another session holds it: ask
    -- fn_iu_history_lock_holder who. Only the package can take this lock (nobody else may
    -- name the table), unlike the advisory lock it replaces, which any login could hold.
    -- Waiting for it holds nothing anybody else waits for: it is the first lock of the lock
    -- order (sql/functions/history/README.md). Internal.
    -- ---------------------------------------------------------------------------------------
BEGIN
    IF p_wait_ms > 0 THEN
        PERFORM set_config('lock_timeout', p_wait_ms || 'ms', true);   -- reset when this function returns
        LOCK TABLE iu_core.iu_history_lock IN SHARE UPDATE EXCLUSIVE MODE;
    ELSE
        LOCK TABLE iu_core.iu_history_lock IN SHARE UPDATE EXCLUSIVE MODE NOWAIT;
    END IF;
    RETURN true;
EXCEPTION WHEN lock_not_available OR deadlock_detected THEN
    RETURN false;
END;
$$;
