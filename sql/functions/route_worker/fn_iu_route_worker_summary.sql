CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_summary(
    p_worker_name  text,
    p_event_domain text,
    p_batch_limit  integer,
    p_tally        iu_core.iu_route_run_tally,
    p_window_open  boolean,
    p_opened       integer,
    p_closed       integer,
    p_fallback_err text,
    p_idle         boolean,
    p_holders      jsonb
)
RETURNS jsonb
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_summary: the summary of a run that was not gated and not busy, the
    -- one shape both the idle path and the full pass return: the counts
    -- (fn_iu_route_worker_summary_counts) and the keys that name the worker, its domain, the
    -- transactions holding its position back and the moment.
    -- Inlinable SQL (the caller passes plain values: computed holders, not a call), so
    -- building it costs no call.
    -- ---------------------------------------------------------------------------------------
    -- The holders are joined to the counts as JSON text (IMMUTABLE, as the counts are: see
    -- fn_iu_route_worker_summary_counts), not built per call: called with no holder (the
    -- constant '[]' an idle run mostly passes) they fold, with the counts, into one
    -- constant when the run's plan is made, so an idle run builds only the four keys that
    -- vary by call. (A list of holders goes through its text once: a run that has one is
    -- rare, and the list is short.)
    -- The four keys come first: jsonb sorts an object's keys when it is built, and the
    -- concatenation sorts fewer moves that way (about 2 k instructions a call less; the keys
    -- and values are the same whichever way round, none of them appears on both sides).
    SELECT jsonb_build_object(
               'worker', p_worker_name,
               'event_domain', p_event_domain,
               'batch_limit', p_batch_limit,
               'run_at', now())
        || (iu_core.fn_iu_route_worker_summary_counts(p_tally, p_window_open, p_opened, p_closed, p_fallback_err, p_idle)
            || ('{"held_open_count": ' || jsonb_array_length(p_holders)::text
                || ', "held_open_by": ' || p_holders::text || '}')::jsonb)
$$;
