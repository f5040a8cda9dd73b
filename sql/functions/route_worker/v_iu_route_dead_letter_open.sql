CREATE OR REPLACE VIEW public.v_iu_route_dead_letter_open AS
SELECT d.id,
       d.worker_name,
       d.event_id,
       d.event_domain,
       d.event_type,
       d.event_stream,
       d.route_key,
       d.idempotency_key,
       d.error_code,
       d.error_message,
       d.failed_attempts,
       d.first_failed_at,
       d.last_failed_at,
       round(extract(epoch FROM now() - d.first_failed_at)::numeric, 3) AS age_seconds,
       format('SELECT fn_iu_route_dead_letter_replay(%L);', d.id) AS replay_sql
  FROM public.iu_route_dead_letter d
 WHERE d.resolved_at IS NULL;

COMMENT ON VIEW public.v_iu_route_dead_letter_open IS
    'Open (unresolved) route worker dead letters, with the replay call for each.';
