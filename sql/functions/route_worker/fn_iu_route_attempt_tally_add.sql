CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_attempt_tally_add(p_worker_name text, p_statuses text[], p_attempts integer[], p_replays integer[])
RETURNS void
LANGUAGE plpgsql
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_attempt_tally_add: count new attempt rows of one worker into
    -- iu_route_attempt_tally, in the caller's transaction. Called by every writer of
    -- iu_route_attempt (the run, the replay).
    --   p_statuses  the statuses counted; p_attempts[i] new rows of p_statuses[i], p_replays[i]
    --               of them replays (the arrays side by side; a status with no new row is
    --               skipped, so a run passes every status and its counts)
    -- One statement for all of them: a run's counts of three or five statuses cost one
    -- upsert, not one each.
    -- ---------------------------------------------------------------------------------------
BEGIN
    -- PL/pgSQL, not SQL: a SQL function whose body is an INSERT is never inlined, so it is
    -- parsed and planned again in every statement that calls it (every busy run); PL/pgSQL
    -- keeps the plan for the session.
    INSERT INTO public.iu_route_attempt_tally AS t (worker_name, status, attempts, replays)
    SELECT p_worker_name, x.status, x.attempts, x.replays
      FROM unnest(p_statuses, p_attempts, p_replays) AS x(status, attempts, replays)
     WHERE x.attempts > 0
    ON CONFLICT (worker_name, status) DO UPDATE
       SET attempts = t.attempts + EXCLUDED.attempts,
           replays  = t.replays + EXCLUDED.replays,
           last_at  = now();
END;
$$;
