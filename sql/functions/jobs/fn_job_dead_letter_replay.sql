CREATE OR REPLACE FUNCTION public.fn_job_dead_letter_replay(p_dead_letter_id uuid, p_actor text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
-- Re-enqueues a dead job as a fresh job (new job_id, attempt 0, due now) from its snapshot,
-- with its kind, domain, payload, max_attempts and dedupe key, and resolves the dead letter.
DECLARE
    v_dl  public.job_dead_letter;
    v_new uuid;
    v_held record;
BEGIN
    IF p_dead_letter_id IS NULL THEN
        RAISE EXCEPTION 'fn_job_dead_letter_replay: p_dead_letter_id required' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO v_dl FROM public.job_dead_letter WHERE id = p_dead_letter_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fn_job_dead_letter_replay: dead letter % not found', p_dead_letter_id USING ERRCODE = 'P0002',
            HINT = 'Open job dead letters: SELECT id, job_kind, last_error FROM job_dead_letter WHERE resolved_at IS NULL;';
    END IF;
    IF v_dl.resolved_at IS NOT NULL THEN
        RETURN jsonb_build_object('replayed', false, 'reason', 'already_resolved', 'dead_letter_id', v_dl.id,
                                  'resolution', v_dl.resolution, 'resolved_at', v_dl.resolved_at);
    END IF;
    -- Its dedupe key held by a live job of another kind or domain: the enqueue would be
    -- refused (23505). Answered, not raised, and the dead letter stays open: a bulk replay
    -- goes on with the others, and this one can be replayed once the key is free.
    SELECT h.job_id, h.job_kind, h.event_domain INTO v_held
      FROM iu_core.fn_job_dedupe_held_elsewhere(v_dl.job_snapshot ->> 'dedupe_key', v_dl.job_kind, v_dl.event_domain) h
     LIMIT 1;
    IF FOUND THEN
        RETURN jsonb_build_object('replayed', false, 'reason', 'dedupe_key_held', 'dead_letter_id', v_dl.id,
                                  'dedupe_key', v_dl.job_snapshot ->> 'dedupe_key', 'held_by_job_id', v_held.job_id,
                                  'held_by_job_kind', v_held.job_kind, 'held_by_event_domain', v_held.event_domain);
    END IF;
    v_new := public.fn_job_enqueue(v_dl.job_kind, v_dl.event_domain,
                            coalesce(v_dl.job_snapshot -> 'payload', '{}'::jsonb), now(),
                            v_dl.job_snapshot ->> 'dedupe_key',
                            coalesce((v_dl.job_snapshot ->> 'max_attempts')::integer, 5));
    UPDATE public.job_dead_letter
       SET resolved_at = now(), resolution = 'replayed', resolved_by = iu_core.fn_queue_actor(p_actor, 'fn_job_dead_letter_replay'), replayed_job_id = v_new
     WHERE id = v_dl.id;
    RETURN jsonb_build_object('replayed', true, 'dead_letter_id', v_dl.id, 'job_id', v_new,
                              'original_job_id', v_dl.job_id, 'resolution', 'replayed');
END;
$$;
