CREATE OR REPLACE FUNCTION iu_core.fn_dot_config_touch()
RETURNS trigger
LANGUAGE plpgsql
AS $$
-- BEFORE UPDATE on dot_config: updated_at and updated_by say when, and by whom, the row's
-- value last changed. An UPDATE that leaves the value as it was (a description edited, a
-- config-management run rewriting every row as it is) keeps them. Why: a closed gate's
-- updated_at is when it was closed, and the route worker's status counts a closed gate's
-- grace from it (v_iu_route_worker_status.gated_waiting_since, iu-runner health
-- --gated-grace); when every write moved it, editing a long-closed gate's description made
-- events that had waited past the grace read as inside it again, and health went from 3 back
-- to 0 for another grace. A write that changes the value (even one that keeps a gate closed,
-- 'false' to 'off') is an operator acting on the gate and restarts it.
BEGIN
    IF NEW.value IS DISTINCT FROM OLD.value THEN
        NEW.updated_at := now();
        NEW.updated_by := current_user;
    ELSE
        NEW.updated_at := OLD.updated_at;
        NEW.updated_by := OLD.updated_by;
    END IF;
    RETURN NEW;
END;
$$;
