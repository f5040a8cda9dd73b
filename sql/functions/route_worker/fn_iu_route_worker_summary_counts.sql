CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_summary_counts(
    p_tally        iu_core.iu_route_run_tally,
    p_window_open  boolean,
    p_opened       integer,
    p_closed       integer,
    p_fallback_err text,
    p_idle         boolean
)
RETURNS jsonb
LANGUAGE sql IMMUTABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_summary_counts: what a run did (its tally, its windows, whether it
    -- fell back and why, whether it was idle), the part of the summary that names neither the
    -- worker nor the moment.
    -- (A NULL value is written as JSON null, as jsonb_build_object would write it.)
    -- Why JSON text and not jsonb_build_object: jsonb_build_object is STABLE, and a STABLE call
    -- is neither folded nor inlined into an IMMUTABLE function. Text made of integers and
    -- booleans needs no escaping, and every step of it (the casts, ||, the jsonb input, and
    -- jsonb_object for the fallback's error text) is IMMUTABLE, so this function is both:
    -- called with constants, as the idle path calls it (the zero tally, one window opened and
    -- closed, no fallback), PostgreSQL folds it into one constant when the run's plan is made,
    -- so an idle run builds only the keys that vary; called with the full pass's values it is
    -- inlined, no call.
    -- ---------------------------------------------------------------------------------------
    SELECT ('{"gated": false, "busy": false'
            || ', "claimed": ' || coalesce((p_tally).claimed::text, 'null')
            || ', "attempts_written": ' || coalesce((p_tally).attempts_written::text, 'null')
            || ', "dead_lettered": ' || coalesce((p_tally).dead_lettered::text, 'null')
            || ', "dry_run": ' || coalesce((p_tally).dry_run::text, 'null')
            || ', "disabled": ' || coalesce((p_tally).disabled::text, 'null')
            || ', "skipped": ' || coalesce((p_tally).skipped::text, 'null')
            || ', "failed": ' || coalesce((p_tally).failed::text, 'null')
            || ', "sent": ' || coalesce((p_tally).sent::text, 'null')
            || ', "already_attempted": ' || coalesce((p_tally).already_attempted::text, 'null')
            || ', "caught_up": ' || coalesce((NOT p_window_open)::text, 'null')
            || ', "window_open": ' || coalesce(p_window_open::text, 'null')
            || ', "windows_opened": ' || coalesce(p_opened::text, 'null')
            || ', "windows_closed": ' || coalesce(p_closed::text, 'null')
            || ', "fallback": ' || coalesce((p_fallback_err IS NOT NULL)::text, 'null')
            || ', "idle": ' || coalesce(p_idle::text, 'null')
            || '}')::jsonb
        -- The one string: jsonb_object (IMMUTABLE too) escapes it.
        || CASE WHEN p_fallback_err IS NOT NULL
                THEN jsonb_object(ARRAY['fallback_error'], ARRAY[left(p_fallback_err, 500)])
                ELSE '{}'::jsonb END
$$;
