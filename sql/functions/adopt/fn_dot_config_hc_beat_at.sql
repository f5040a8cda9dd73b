CREATE OR REPLACE FUNCTION iu_core.fn_dot_config_hc_beat_at(p_value text, p_updated_at timestamptz)
RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- When the hc executor last ran, as its dot_config key hc_executor_last_run says: the
    -- timestamp it holds, or (a value that is not one) the moment the key was written.
    -- Never later than now: a clock ahead must not make a silent executor look fresh.
BEGIN
    RETURN least(p_value::timestamptz, now());
EXCEPTION WHEN OTHERS THEN
    RETURN least(coalesce(p_updated_at, now()), now());
END;
$$;
