CREATE OR REPLACE FUNCTION public.fn_iu_route_deliver(
    p_event_snapshot  jsonb,
    p_route_key       text,
    p_route_kind      text,
    p_idempotency_key text
)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- The delivery seam. Unbuilt on purpose: nothing is delivered downstream by this package.
    -- ---------------------------------------------------------------------------------------
BEGIN
    RAISE EXCEPTION 'fn_iu_route_deliver: delivery is not built: route % (dry_run = false) fails closed',
        coalesce(p_route_key, '(none)')
        USING ERRCODE = 'feature_not_supported',
              HINT = 'Keep the route dry_run (UPDATE iu_outbound_route SET dry_run = true ...) and replay the dead letter, or build the delivery seam.';
END;
$$;
