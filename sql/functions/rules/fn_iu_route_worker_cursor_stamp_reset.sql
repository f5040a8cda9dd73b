CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_cursor_stamp_reset()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    -- reset_by holds the actor a caller claims; the login that really reset the cursor is
    -- stamped next to it. Fires only for updates that name reset_by (a reset), never for a
    -- run's position updates.
    NEW.reset_session_user := session_user;
    RETURN NEW;
END;
$$;
