CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_group_advance(
    p_member_name  text,
    p_runner       text,
    p_group_name   text,
    p_event_domain text,
    p_done         pg_snapshot,
    p_window       pg_snapshot,
    p_after_txid   xid8,
    p_after_id     uuid,
    p_tally        iu_core.iu_route_run_tally,
    p_summary      jsonb
)
RETURNS void
LANGUAGE plpgsql
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_group_advance: a member's fn_iu_route_worker_advance, in the run's
    -- transaction: the member's cursor (position and counters, as a worker's), the running
    -- audit counts under the GROUP's name (the name its attempts carry), and the heartbeat of
    -- the runner (p_runner: the member whose process ran this; a member taken over is not
    -- beaten, so its silence stays visible).
    -- ---------------------------------------------------------------------------------------
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
     WHERE cur.worker_name = p_member_name;

    PERFORM iu_core.fn_iu_route_attempt_tally_add(p_group_name, x.status, x.n, 0)
       FROM (VALUES ('dry_run', p_tally.dry_run), ('disabled', p_tally.disabled), ('skipped', p_tally.skipped),
                    ('failed', p_tally.failed), ('sent', p_tally.sent)) AS x(status, n)
      WHERE x.n > 0;

    PERFORM iu_core.fn_iu_route_worker_beat(p_runner, p_event_domain,
        jsonb_build_object('claimed', p_tally.claimed, 'attempts_written', p_tally.attempts_written,
                           'dead_lettered', p_tally.dead_lettered, 'caught_up', p_window IS NULL,
                           'held_open_count', jsonb_array_length(p_summary->'held_open_by'),
                           'member', p_member_name));
END;
$$;
