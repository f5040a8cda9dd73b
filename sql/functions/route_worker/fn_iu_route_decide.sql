CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_decide(p_route_key text, p_enabled boolean, p_dry_run boolean)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_decide: THE route decision, used by the page statement, the event-by-event
    -- fallback and the replay (and mirrored in Go by tests/routeworker_mirror/decision).
    --   p_route_key  the matched iu_outbound_route's key, NULL when no route matched
    --   p_enabled, p_dry_run  that route's switches (ignored without a route)
    -- Returns skipped (no route), disabled (route off), dry_run (a logged decision, nothing
    -- delivered) or deliver (hand the event to the delivery seam, which decides sent/failed).
    -- Inlinable SQL (IMMUTABLE, no SET): planned into the page statement, no call per event.
    -- ---------------------------------------------------------------------------------------
    SELECT CASE WHEN p_route_key IS NULL THEN 'skipped'
                WHEN NOT p_enabled THEN 'disabled'
                WHEN p_dry_run THEN 'dry_run'
                ELSE 'deliver' END
$$;
