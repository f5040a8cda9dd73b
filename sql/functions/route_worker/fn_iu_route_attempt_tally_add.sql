CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_attempt_tally_add(p_worker_name text, p_status text, p_attempts integer, p_replays integer)
RETURNS void
LANGUAGE plpgsql
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_attempt_tally_add: count p_attempts new attempt rows (p_replays of them
    -- replays) of one worker and status into iu_route_attempt_tally, in the caller's
    -- transaction. Called by every writer of iu_route_attempt (the run, the replay).
    -- ---------------------------------------------------------------------------------------
BEGIN
    -- PL/pgSQL, not SQL: a SQL function whose body is an INSERT is never inlined, so it is
    -- parsed and planned again in every statement that calls it (every busy run); PL/pgSQL
    -- keeps the plan for the session.
    INSERT INTO public.iu_route_attempt_tally AS t (worker_name, status, attempts, replays)
    VALUES (p_worker_name, p_status, p_attempts, p_replays)
    ON CONFLICT (worker_name, status) DO UPDATE
       SET attempts = t.attempts + EXCLUDED.attempts,
           replays  = t.replays + EXCLUDED.replays,
           last_at  = now();
END;
$$;
