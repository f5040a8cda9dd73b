CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_advance(
    p_worker_name  text,
    p_event_domain text,
    p_done         pg_snapshot,
    p_window       pg_snapshot,
    p_after_txid   xid8,
    p_after_id     uuid,
    p_tally        iu_core.iu_route_run_tally,
    p_summary      jsonb,
    p_group_name   text DEFAULT NULL,
    p_runner       text DEFAULT NULL,
    p_beat         boolean DEFAULT true
)
RETURNS void
LANGUAGE plpgsql
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_advance: move the cursor and count the run, in the run's transaction
    -- (so the position moves atomically with the attempts), then beat the heartbeat.
    --   p_done     the new done snapshot, NULL when no window closed in this run
    --   p_window, p_after_txid, p_after_id   the open window and the position in it (NULLs: none)
    --   p_tally    what the run did;  p_summary  the run's JSON summary, kept for operators
    --   p_group_name  a group member's run: its group, the name the running audit counts
    --              carry (as its attempts do); NULL for a worker (its own name)
    --   p_runner   the executor whose heartbeat is beaten: NULL for p_worker_name itself; a
    --              member whose run another member's runner took over is not beaten, so its
    --              silence stays visible (the beat then names the member it routed for)
    --   p_beat     false: beat nobody (a group member's runner that routed for another member
    --              without holding its own member's lock: fn_iu_route_group_pass says why)
    -- Two statements for a run whose beat is not due (the common busy run): the cursor's
    -- UPDATE, which also asks whether the beat is due; the running counts, every status in
    -- one statement. The beat only when due.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_beat_due boolean;
BEGIN
    UPDATE public.iu_route_worker_cursor cur
       SET done_snapshot     = coalesce(p_done, cur.done_snapshot),
           window_snapshot   = p_window,
           window_txid       = p_after_txid,
           window_event_id   = p_after_id,
           system_identifier = coalesce(cur.system_identifier, (SELECT s.system_identifier FROM pg_control_system() s)),
           last_created_at   = coalesce(p_tally.last_created_at, cur.last_created_at),
           last_event_id     = coalesce(p_tally.last_id, cur.last_event_id),
           events_seen       = cur.events_seen + p_tally.claimed,
           attempts_written  = cur.attempts_written + p_tally.attempts_written,
           dead_lettered     = cur.dead_lettered + p_tally.dead_lettered,
           runs_total        = cur.runs_total + 1,
           last_run_at       = now(),
           last_run_summary  = p_summary
     WHERE cur.worker_name = p_worker_name
    RETURNING EXISTS (SELECT 1 FROM iu_core.fn_iu_route_worker_beat_due(coalesce(p_runner, p_worker_name), NULL))
      INTO v_beat_due;

    PERFORM iu_core.fn_iu_route_attempt_tally_add(coalesce(p_group_name, p_worker_name),
                '{dry_run,disabled,skipped,failed,sent}',
                ARRAY[p_tally.dry_run, p_tally.disabled, p_tally.skipped, p_tally.failed, p_tally.sent],
                '{0,0,0,0,0}');

    IF NOT (p_beat AND v_beat_due) THEN
        RETURN;
    END IF;
    PERFORM iu_core.fn_iu_route_worker_beat(coalesce(p_runner, p_worker_name), p_event_domain,
        jsonb_build_object('claimed', p_tally.claimed, 'attempts_written', p_tally.attempts_written,
                           'dead_lettered', p_tally.dead_lettered, 'caught_up', p_window IS NULL,
                           'held_open_count', jsonb_array_length(p_summary->'held_open_by'))
        || CASE WHEN p_group_name IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('member', p_worker_name) END);
END;
$$;
