CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_group_rebalance(p_caller text, p_group_name text, p_join text, p_leave text)
RETURNS jsonb
LANGUAGE plpgsql
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_group_rebalance(p_caller, p_group_name, p_join, p_leave) -> jsonb: a change
    -- of a group's members (p_join joins, or p_leave leaves), in the caller's transaction,
    -- which holds the group row (FOR UPDATE). Internal (register_member, remove_member).
    --   1. Every member's lock, waited for in lock_id order: no member run is in progress, so
    --      every stored position was taken before the boundary below (a snapshot taken
    --      later sees everything an earlier one saw).
    --   2. Refused (55000) while a hand-over is pending, unless no member ever routed (all at
    --      the start of the stream: nothing to hand over).
    --   3. The members after the change, in the order of their names, each get an equal
    --      share of the buckets (contiguous ranges).
    --   4. Nothing routed yet: the shares apply at once (the generation moves on, a leaving
    --      member is deleted now). Otherwise a hand-over: the boundary is a snapshot taken
    --      now (fn_iu_route_worker_snapshot); each member keeps its buckets up to it (its
    --      windows are cut there) and gets its share as next buckets, applied when every
    --      member is at the boundary (fn_iu_route_group_settle); a joining member starts at
    --      the boundary with no buckets; a leaving one gets none next and is deleted then.
    -- ---------------------------------------------------------------------------------------
DECLARE
    g         public.iu_route_group%ROWTYPE;
    r         record;
    v_fresh   boolean;
    v_members text[];
    v_n       integer;
    v_b       integer := iu_core.fn_iu_route_group_buckets();
    v_snap    pg_snapshot;
    v_sysid   bigint := (SELECT s.system_identifier FROM pg_control_system() s);
    v_left    text[];
BEGIN
    SELECT * INTO g FROM public.iu_route_group gr WHERE gr.group_name = p_group_name FOR UPDATE;
    FOR r IN SELECT c.worker_name, c.lock_id FROM public.iu_route_worker_cursor c
              WHERE c.group_name = p_group_name ORDER BY c.lock_id LOOP
        BEGIN
            PERFORM pg_advisory_xact_lock(iu_core.fn_iu_route_worker_lock_class(), r.lock_id);
        EXCEPTION WHEN lock_not_available THEN
            RAISE EXCEPTION '%: member % of group % is held by another session for more than the lock timeout: %',
                p_caller, quote_literal(r.worker_name), quote_literal(p_group_name),
                iu_core.fn_iu_route_worker_lock_holders(r.lock_id)
                USING ERRCODE = '55P03',
                      HINT = 'A run finishes within its statement timeout; a session that holds the lock longer (idle in transaction, or one that took pg_advisory_lock) is ended with SELECT pg_terminate_backend(<pid>); then try again.';
        END;
    END LOOP;
    -- Read under the locks: every member's last committed position.
    v_fresh := NOT EXISTS (SELECT 1 FROM public.iu_route_worker_cursor c
                            WHERE c.group_name = p_group_name
                              AND (c.done_snapshot IS NOT NULL OR c.window_snapshot IS NOT NULL));
    IF g.boundary_snapshot IS NOT NULL AND NOT v_fresh THEN
        RAISE EXCEPTION '%: group % is rebalancing (since %): one change at a time', p_caller, quote_literal(p_group_name), g.boundary_at
            USING ERRCODE = '55000',
                  HINT = format('The hand-over settles when every member has routed up to its boundary; run the members (a run with nothing to do routes for a member that holds it up). SELECT fn_iu_route_group_health(%L) names the members it waits for.', p_group_name);
    END IF;

    SELECT coalesce(array_agg(s.name ORDER BY s.name), '{}') INTO v_members
      FROM (SELECT gm.member_name AS name
              FROM public.iu_route_group_member gm
              JOIN public.iu_route_worker_cursor c ON c.worker_name = gm.member_name
             WHERE c.group_name = p_group_name AND NOT gm.leaving AND gm.member_name IS DISTINCT FROM p_leave
            UNION
            SELECT p_join WHERE p_join IS NOT NULL) s;
    v_n := cardinality(v_members);

    IF p_join IS NOT NULL THEN
        PERFORM public.fn_iu_route_worker_register(p_join, g.event_domain);
        UPDATE public.iu_route_worker_cursor cur
           SET group_name = p_group_name, system_identifier = v_sysid
         WHERE cur.worker_name = p_join;
        INSERT INTO public.iu_route_group_member (member_name, bucket_lo, bucket_hi, joined_by)
        VALUES (p_join, 0, 0, iu_core.fn_queue_actor(NULL, p_caller));
    END IF;

    IF v_fresh THEN
        UPDATE public.iu_route_group_member gm
           SET bucket_lo = (s.i - 1) * v_b / v_n, bucket_hi = s.i * v_b / v_n, next_lo = NULL, next_hi = NULL
          FROM unnest(v_members) WITH ORDINALITY AS s(name, i)
         WHERE gm.member_name = s.name;
        SELECT coalesce(array_agg(c.worker_name), '{}') INTO v_left
          FROM public.iu_route_worker_cursor c
         WHERE c.group_name = p_group_name AND c.worker_name <> ALL (v_members);
        DELETE FROM public.queue_heartbeat h WHERE h.executor_id = ANY (v_left);
        DELETE FROM public.iu_route_worker_cursor c WHERE c.worker_name = ANY (v_left);
        UPDATE public.iu_route_group gr
           SET boundary_snapshot = NULL, boundary_at = NULL, system_identifier = NULL,
               generation = gr.generation + 1, settled_at = now(),
               last_rebalance = jsonb_build_object('at', now(), 'by', iu_core.fn_queue_actor(NULL, p_caller),
                                                   'joined', p_join, 'left', to_jsonb(v_left), 'hand_over', false,
                                                   'settled_generation', gr.generation + 1)
         WHERE gr.group_name = p_group_name;
    ELSE
        v_snap := iu_core.fn_iu_route_worker_snapshot();
        UPDATE public.iu_route_worker_cursor cur SET done_snapshot = v_snap WHERE cur.worker_name = p_join;
        UPDATE public.iu_route_group_member gm
           SET next_lo = (s.i - 1) * v_b / v_n, next_hi = s.i * v_b / v_n
          FROM unnest(v_members) WITH ORDINALITY AS s(name, i)
         WHERE gm.member_name = s.name;
        UPDATE public.iu_route_group_member gm
           SET next_lo = 0, next_hi = 0, leaving = true
         WHERE gm.member_name = p_leave;
        UPDATE public.iu_route_group gr
           SET boundary_snapshot = v_snap, boundary_at = now(), system_identifier = v_sysid,
               last_rebalance = jsonb_build_object('at', now(), 'by', iu_core.fn_queue_actor(NULL, p_caller),
                                                   'joined', p_join, 'leaving', p_leave, 'hand_over', true,
                                                   'generation', gr.generation)
         WHERE gr.group_name = p_group_name;
    END IF;

    RETURN iu_core.fn_iu_route_group_doc(p_group_name);
END;
$$;
