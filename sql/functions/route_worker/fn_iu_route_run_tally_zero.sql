CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_run_tally_zero()
RETURNS iu_core.iu_route_run_tally
LANGUAGE sql IMMUTABLE
AS $$
    -- fn_iu_route_run_tally_zero(): the tally of a run that has done nothing yet (the full
    -- pass starts from it; the idle path reports it). Inlinable SQL: a constant.
    SELECT ROW(0, 0, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL)::iu_core.iu_route_run_tally
$$;
