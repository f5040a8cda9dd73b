CREATE OR REPLACE FUNCTION public.fn_iu_route_worker_remove_member(p_group_name text, p_member_name text)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_remove_member(p_group_name, p_member_name) -> jsonb (the group)
    -- Takes a member out of its group: its buckets go to the others by a hand-over at one
    -- snapshot (fn_iu_route_group_rebalance). It routes its buckets up to the boundary (its
    -- own runner, or another member's run taking it over), and is deleted, cursor and
    -- heartbeat, when the hand-over settles; at once while the group has routed nothing.
    -- Its attempts stay the group's. Refused: P0002 no such group or member; 22023 the last
    -- member (a group needs one); 55000 while a hand-over is pending.
    -- ---------------------------------------------------------------------------------------
DECLARE
    g public.iu_route_group%ROWTYPE;
BEGIN
    PERFORM iu_core.fn_iu_route_worker_require_name('fn_iu_route_worker_remove_member', p_group_name);
    PERFORM iu_core.fn_iu_route_worker_require_name('fn_iu_route_worker_remove_member', p_member_name);
    SELECT * INTO g FROM public.iu_route_group gr WHERE gr.group_name = p_group_name FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fn_iu_route_worker_remove_member: group % does not exist', quote_literal(p_group_name)
            USING ERRCODE = 'P0002', HINT = 'List the groups: SELECT fn_iu_route_group_health();';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM public.iu_route_worker_cursor c
                    WHERE c.worker_name = p_member_name AND c.group_name = p_group_name) THEN
        RAISE EXCEPTION 'fn_iu_route_worker_remove_member: % is not a member of group %', quote_literal(p_member_name), quote_literal(p_group_name)
            USING ERRCODE = 'P0002', HINT = format('List its members: SELECT fn_iu_route_group_health(%L);', p_group_name);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM public.iu_route_group_member gm
                     JOIN public.iu_route_worker_cursor c ON c.worker_name = gm.member_name
                    WHERE c.group_name = p_group_name AND gm.member_name <> p_member_name AND NOT gm.leaving) THEN
        RAISE EXCEPTION 'fn_iu_route_worker_remove_member: % is the last member of group %: a group needs one to route its domain',
            quote_literal(p_member_name), quote_literal(p_group_name)
            USING ERRCODE = '22023', HINT = 'Add another member first (fn_iu_route_worker_register_member), or stop the group''s runners.';
    END IF;
    RETURN iu_core.fn_iu_route_group_rebalance('fn_iu_route_worker_remove_member', p_group_name, NULL, p_member_name)
        || jsonb_build_object('member', p_member_name, 'removed', true);
END;
$$;
