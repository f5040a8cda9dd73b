CREATE OR REPLACE FUNCTION public.fn_iu_route_worker_register_member(
    p_group_name       text,
    p_member_name      text,
    p_event_domain     text DEFAULT 'iu',
    p_takeover_seconds integer DEFAULT NULL
)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- The wait for the members' runs in progress is bounded (fn_iu_route_group_rebalance).
SET lock_timeout = '5s'
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_register_member(p_group_name, p_member_name, p_event_domain DEFAULT
    -- 'iu', p_takeover_seconds DEFAULT NULL) -> jsonb (the group, fn_iu_route_group_doc)
    -- Adds a member to a group of route workers that share one domain, creating the group
    -- with its first member. The group is one logical worker: its audit rows, idempotency
    -- keys, dead letters and running counts carry the group's name. Each member is a route
    -- worker (a cursor with its own position, lock and PG_worker heartbeat, run with
    -- fn_iu_route_worker_run(p_member_name)) that routes the events whose stream hashes into
    -- its buckets. Adding a member rebalances: at once while the group has routed nothing,
    -- else by a hand-over at one snapshot every member reaches (fn_iu_route_group_rebalance).
    -- Idempotent: an existing member of the group is left as it is.
    --   p_takeover_seconds  how long a member's runner may stay silent (its heartbeat) before
    --                       the other members route its buckets for it; NULL keeps the
    --                       group's (60 for a new group)
    -- Refused (22023): a bad name; a group name that is a route worker's (its keys would be
    -- that worker's); a member name that is a group, a plain worker or another group's
    -- member; another domain than the group's. 55000 while a hand-over is pending.
    -- ---------------------------------------------------------------------------------------
DECLARE
    g public.iu_route_group%ROWTYPE;
BEGIN
    PERFORM iu_core.fn_iu_route_worker_require_name('fn_iu_route_worker_register_member', p_group_name);
    PERFORM iu_core.fn_iu_route_worker_require_name('fn_iu_route_worker_register_member', p_member_name);
    PERFORM iu_core.fn_iu_require_name('fn_iu_route_worker_register_member', 'p_event_domain', p_event_domain);
    IF p_takeover_seconds IS NOT NULL AND p_takeover_seconds NOT BETWEEN 0 AND 86400 THEN
        RAISE EXCEPTION 'fn_iu_route_worker_register_member: p_takeover_seconds must be between 0 and 86400, got %', p_takeover_seconds
            USING ERRCODE = '22023';
    END IF;
    IF p_group_name = p_member_name THEN
        RAISE EXCEPTION 'fn_iu_route_worker_register_member: the member % may not bear its group''s name', quote_literal(p_member_name)
            USING ERRCODE = '22023', HINT = 'Name members apart from the group, e.g. <group>-1, <group>-2.';
    END IF;
    IF EXISTS (SELECT 1 FROM public.iu_route_worker_cursor c WHERE c.worker_name = p_group_name) THEN
        RAISE EXCEPTION 'fn_iu_route_worker_register_member: % is a route worker''s name: a group''s attempts carry its name and keys, so the two may not share one', quote_literal(p_group_name)
            USING ERRCODE = '22023', HINT = 'Name the group otherwise.';
    END IF;
    IF EXISTS (SELECT 1 FROM public.iu_route_group gr WHERE gr.group_name = p_member_name) THEN
        RAISE EXCEPTION 'fn_iu_route_worker_register_member: % is a group''s name', quote_literal(p_member_name)
            USING ERRCODE = '22023', HINT = 'Name the member otherwise.';
    END IF;
    IF EXISTS (SELECT 1 FROM public.iu_route_worker_cursor c
                WHERE c.worker_name = p_member_name AND c.group_name IS DISTINCT FROM p_group_name) THEN
        RAISE EXCEPTION 'fn_iu_route_worker_register_member: % is already %', quote_literal(p_member_name),
            (SELECT CASE WHEN c.group_name IS NULL THEN 'a route worker of its own'
                         ELSE format('a member of group %L', c.group_name) END
               FROM public.iu_route_worker_cursor c WHERE c.worker_name = p_member_name)
            USING ERRCODE = '22023', HINT = 'A member routes only its group''s buckets: register it under a new name.';
    END IF;

    INSERT INTO public.iu_route_group (group_name, event_domain, takeover_seconds, created_by)
    VALUES (p_group_name, p_event_domain, coalesce(p_takeover_seconds, 60),
            iu_core.fn_queue_actor(NULL, 'fn_iu_route_worker_register_member'))
    ON CONFLICT (group_name) DO NOTHING;
    SELECT * INTO g FROM public.iu_route_group gr WHERE gr.group_name = p_group_name FOR UPDATE;
    IF g.event_domain <> p_event_domain THEN
        RAISE EXCEPTION 'fn_iu_route_worker_register_member: group % consumes domain %, not %',
            quote_literal(p_group_name), quote_literal(g.event_domain), quote_literal(p_event_domain)
            USING ERRCODE = '22023', HINT = 'A group shares one domain; form another group for another domain.';
    END IF;
    IF p_takeover_seconds IS NOT NULL THEN
        UPDATE public.iu_route_group gr SET takeover_seconds = p_takeover_seconds WHERE gr.group_name = p_group_name;
    END IF;
    IF EXISTS (SELECT 1 FROM public.iu_route_worker_cursor c WHERE c.worker_name = p_member_name) THEN
        RETURN iu_core.fn_iu_route_group_doc(p_group_name) || jsonb_build_object('member', p_member_name, 'created', false);
    END IF;
    RETURN iu_core.fn_iu_route_group_rebalance('fn_iu_route_worker_register_member', p_group_name, p_member_name, NULL)
        || jsonb_build_object('member', p_member_name, 'created', true);
END;
$$;
