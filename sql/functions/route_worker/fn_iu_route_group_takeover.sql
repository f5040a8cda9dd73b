CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_group_takeover(p_runner text, p_batch_limit integer, p_own jsonb)
RETURNS jsonb
LANGUAGE plpgsql
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_group_takeover(p_runner, p_batch_limit, p_own) -> jsonb: when a member's own
    -- run had nothing to do (idle, waiting at a rebalance's boundary, or busy because another
    -- session runs it), its runner routes one batch for another member of its group
    -- (PgQ's cooperative consumers take over a dead sub-consumer's batch the same way):
    --   - a member that holds a pending hand-over up (not at the boundary yet), first; then
    --   - an orphan: a member whose own runner has not beaten its heartbeat for the group's
    --     takeover_seconds (default 60; a beat is due every quarter of the PG_worker
    --     cadence, so a live runner beats well inside it), is paused, or has no heartbeat.
    -- Each candidate's lock is TRIED (never waited for): a member in a run is skipped, so
    -- one member's position is only ever moved by one transaction at a time, whoever runs
    -- it, and its buckets stay in order. The member then runs exactly as its own runner
    -- would run it (fn_iu_route_group_pass), except that the heartbeat beaten is the
    -- runner's, and none when the runner's own member was busy (another session holds its
    -- lock: routing for an orphan is not that member's work). Returns that run's summary
    -- (took_over: true) when it did anything, with own_busy and lock_held_by from p_own when
    -- the runner's member was busy, so the holder stays named; else p_own unchanged. A killed runner's transaction rolls back and frees its lock, so its
    -- buckets are routed from its last committed position: no event lost, none twice.
    -- ---------------------------------------------------------------------------------------
DECLARE
    r      record;
    c      public.iu_route_worker_cursor%ROWTYPE;
    v_doc  jsonb;
BEGIN
    FOR r IN
        SELECT o.worker_name, o.lock_id
          FROM public.iu_route_worker_cursor me
          JOIN public.iu_route_group g ON g.group_name = me.group_name
          JOIN public.iu_route_worker_cursor o ON o.group_name = me.group_name AND o.worker_name <> me.worker_name
          LEFT JOIN public.queue_heartbeat h ON h.executor_id = o.worker_name
         CROSS JOIN LATERAL (SELECT g.boundary_snapshot IS NOT NULL
                                    AND (o.window_snapshot IS NOT NULL
                                         OR o.done_snapshot::text IS DISTINCT FROM g.boundary_snapshot::text) AS behind) b
         WHERE me.worker_name = p_runner
           AND (b.behind
                OR h.executor_id IS NULL
                OR h.paused_at IS NOT NULL
                OR h.last_beat_at < now() - make_interval(secs => g.takeover_seconds))
         ORDER BY b.behind DESC, h.last_beat_at NULLS FIRST, o.worker_name
    LOOP
        CONTINUE WHEN NOT iu_core.fn_iu_route_worker_try_lock(r.lock_id);
        -- Read under the lock: the statement's snapshot sees what its last run committed.
        SELECT * INTO c FROM public.iu_route_worker_cursor cur WHERE cur.worker_name = r.worker_name;
        CONTINUE WHEN NOT FOUND OR c.group_name IS NULL;
        v_doc := iu_core.fn_iu_route_group_pass(p_runner, c, p_batch_limit);
        IF (v_doc->>'idle')::boolean IS DISTINCT FROM true OR (v_doc->>'rebalance_settled')::boolean THEN
            IF (p_own->>'busy')::boolean THEN
                RETURN v_doc || jsonb_build_object('own_busy', true, 'lock_held_by', p_own->'lock_held_by');
            END IF;
            RETURN v_doc;
        END IF;
        -- it had nothing to do either: keep its lock (it is ours until the transaction ends)
        -- and look no further; one member taken over per run keeps the run bounded
        EXIT;
    END LOOP;
    RETURN p_own;
END;
$$;
