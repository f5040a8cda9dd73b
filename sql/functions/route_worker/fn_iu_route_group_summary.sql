CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_group_summary(
    p_group     public.iu_route_group,
    p_member    public.iu_route_group_member,
    p_took_over boolean,
    p_settled   boolean
)
RETURNS jsonb
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_group_summary: the keys a member's run adds to the worker's summary:
    --   group      the group (the name its audit rows carry)
    --   member     the member whose position moved (the worker the call named, unless
    --              took_over: then a member its runner routed for, fn_iu_route_group_takeover)
    --   buckets    [lo, hi) of the member's buckets in this run
    --   rebalance  null when settled; else {generation, boundary_at, next_buckets, leaving}
    --   rebalance_settled  this run settled a hand-over
    -- Inlinable SQL.
    -- ---------------------------------------------------------------------------------------
    SELECT jsonb_build_object(
               'group', (p_group).group_name,
               'member', (p_member).member_name,
               'took_over', p_took_over,
               'buckets', jsonb_build_array((p_member).bucket_lo, (p_member).bucket_hi),
               'generation', (p_group).generation,
               'rebalance', CASE WHEN (p_group).boundary_snapshot IS NOT NULL THEN
                                 jsonb_build_object('boundary_at', (p_group).boundary_at,
                                                    'next_buckets', jsonb_build_array((p_member).next_lo, (p_member).next_hi),
                                                    'leaving', (p_member).leaving) END,
               'rebalance_settled', p_settled)
$$;
