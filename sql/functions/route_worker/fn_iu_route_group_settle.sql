CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_group_settle(p_group_name text)
RETURNS boolean
LANGUAGE plpgsql
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_group_settle(p_group_name) -> true when it settled the group's pending
    -- hand-over, in the caller's transaction (a member's run). It settles only when every
    -- member's done_snapshot is the boundary and none has a window open (each has routed its
    -- current buckets up to the boundary and committed it: the caller's own position, written
    -- earlier in its transaction, counts), or when every member is at the start of the
    -- stream (none ever routed here: after fn_iu_route_worker_reset_cursor of each, e.g. to
    -- re-anchor a restored group, there is nothing to hand over). Then each member's next
    -- buckets become its buckets, the leaving members are deleted with their heartbeats, the
    -- boundary is cleared and the generation moves on.
    -- Never waits: the group row is taken with SKIP LOCKED (a rebalance or another settle
    -- holds it: false, the next run tries again), and each leaving member's lock with a try
    -- (its runner is in a run: false). A rebalance takes the group row and then waits for
    -- the members' locks; a run holds its member's lock, so waiting here could deadlock.
    -- ---------------------------------------------------------------------------------------
DECLARE
    g     public.iu_route_group%ROWTYPE;
    r     record;
    v_left text[];
BEGIN
    SELECT * INTO g FROM public.iu_route_group gr
     WHERE gr.group_name = p_group_name AND gr.boundary_snapshot IS NOT NULL
       FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF EXISTS (SELECT 1 FROM public.iu_route_worker_cursor c
                WHERE c.group_name = p_group_name
                  AND (c.window_snapshot IS NOT NULL OR c.done_snapshot::text IS DISTINCT FROM g.boundary_snapshot::text))
       AND EXISTS (SELECT 1 FROM public.iu_route_worker_cursor c
                    WHERE c.group_name = p_group_name
                      AND (c.window_snapshot IS NOT NULL OR c.done_snapshot IS NOT NULL)) THEN
        RETURN false;
    END IF;
    FOR r IN SELECT c.worker_name, c.lock_id
               FROM public.iu_route_group_member gm
               JOIN public.iu_route_worker_cursor c ON c.worker_name = gm.member_name
              WHERE c.group_name = p_group_name AND gm.leaving
              ORDER BY c.lock_id LOOP
        IF NOT iu_core.fn_iu_route_worker_try_lock(r.lock_id) THEN
            RETURN false;
        END IF;
        v_left := v_left || r.worker_name;
    END LOOP;

    UPDATE public.iu_route_group_member gm
       SET bucket_lo = gm.next_lo, bucket_hi = gm.next_hi, next_lo = NULL, next_hi = NULL
      FROM public.iu_route_worker_cursor c
     WHERE c.worker_name = gm.member_name AND c.group_name = p_group_name AND NOT gm.leaving;
    DELETE FROM public.queue_heartbeat h WHERE h.executor_id = ANY (v_left);
    DELETE FROM public.iu_route_worker_cursor c WHERE c.worker_name = ANY (v_left);
    UPDATE public.iu_route_group gr
       SET boundary_snapshot = NULL, boundary_at = NULL, system_identifier = NULL,
           generation = gr.generation + 1, settled_at = now(),
           last_rebalance = gr.last_rebalance || jsonb_build_object('settled_at', now(), 'left', coalesce(to_jsonb(v_left), '[]'::jsonb),
                                                                     'settled_generation', gr.generation + 1)
     WHERE gr.group_name = p_group_name;
    RETURN true;
END;
$$;
