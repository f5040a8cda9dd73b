-- From the running counters (iu_route_attempt_tally), so its cost does not grow with the
-- audit log. events = first decisions (attempts that are not replays).
CREATE OR REPLACE VIEW public.v_iu_route_attempt_summary AS
SELECT t.worker_name,
       t.status,
       t.attempts,
       t.attempts - t.replays AS events,
       t.replays,
       t.first_at,
       t.last_at
  FROM public.iu_route_attempt_tally t;

COMMENT ON VIEW public.v_iu_route_attempt_summary IS
    'Route worker audit rows by worker and status (attempts, first decisions, replays, first/last), from running counters.';
