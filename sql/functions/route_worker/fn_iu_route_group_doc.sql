CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_group_doc(p_group_name text)
RETURNS jsonb
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_group_doc(p_group_name): a group as register_member, remove_member and the
    -- group health answer it: group, event_domain, generation, state (settled | rebalancing),
    -- boundary_at, takeover_seconds, last_rebalance, and members[] in bucket order, each
    -- {member, buckets [lo, hi), next_buckets (during a rebalance), leaving, at_boundary}.
    -- ---------------------------------------------------------------------------------------
    SELECT jsonb_build_object(
               'group', g.group_name,
               'event_domain', g.event_domain,
               'generation', g.generation,
               'state', CASE WHEN g.boundary_snapshot IS NULL THEN 'settled' ELSE 'rebalancing' END,
               'boundary_at', g.boundary_at,
               'takeover_seconds', g.takeover_seconds,
               'last_rebalance', g.last_rebalance,
               'members', coalesce((
                   SELECT jsonb_agg(jsonb_build_object(
                              'member', gm.member_name,
                              'buckets', jsonb_build_array(gm.bucket_lo, gm.bucket_hi),
                              'next_buckets', CASE WHEN gm.next_lo IS NOT NULL THEN jsonb_build_array(gm.next_lo, gm.next_hi) END,
                              'leaving', gm.leaving,
                              'at_boundary', CASE WHEN g.boundary_snapshot IS NOT NULL THEN
                                                  c.window_snapshot IS NULL AND c.done_snapshot::text = g.boundary_snapshot::text END)
                          ORDER BY gm.bucket_lo, gm.next_lo, gm.member_name)
                     FROM public.iu_route_group_member gm
                     JOIN public.iu_route_worker_cursor c ON c.worker_name = gm.member_name
                    WHERE c.group_name = g.group_name), '[]'::jsonb))
      FROM public.iu_route_group g
     WHERE g.group_name = p_group_name
$$;
