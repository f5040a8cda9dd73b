CREATE OR REPLACE FUNCTION public.fn_job_dead_letter_resolve(p_dead_letter_id uuid, p_resolution text, p_actor text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
DECLARE
    v_dl public.job_dead_letter;
BEGIN
    IF p_dead_letter_id IS NULL THEN
        RAISE EXCEPTION 'fn_job_dead_letter_resolve: p_dead_letter_id required' USING ERRCODE = '22023';
    END IF;
    -- Blank (tabs and newlines included) is refused, and free text is bounded like every
    -- other reason of the package (1,000 bytes): an audit column holds a note, not data.
    IF iu_core.fn_iu_is_blank(p_resolution) THEN
        RAISE EXCEPTION 'fn_job_dead_letter_resolve: p_resolution required' USING ERRCODE = '22023',
            HINT = 'Say what was done, e.g. ''obsolete: superseded by job ...'' or ''fixed by hand, ticket OPS-1''.';
    END IF;
    PERFORM iu_core.fn_iu_require_name('fn_job_dead_letter_resolve', 'p_resolution', p_resolution, 1000);
    SELECT * INTO v_dl FROM public.job_dead_letter WHERE id = p_dead_letter_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fn_job_dead_letter_resolve: dead letter % not found', p_dead_letter_id USING ERRCODE = 'P0002';
    END IF;
    IF v_dl.resolved_at IS NOT NULL THEN
        RETURN jsonb_build_object('resolved', false, 'reason', 'already_resolved', 'dead_letter_id', v_dl.id,
                                  'resolution', v_dl.resolution);
    END IF;
    UPDATE public.job_dead_letter
       SET resolved_at = now(), resolution = p_resolution, resolved_by = iu_core.fn_queue_actor(p_actor, 'fn_job_dead_letter_resolve')
     WHERE id = v_dl.id
    RETURNING * INTO v_dl;
    RETURN jsonb_build_object('resolved', true, 'dead_letter_id', v_dl.id, 'resolution', v_dl.resolution,
                              'resolved_by', v_dl.resolved_by, 'resolved_at', v_dl.resolved_at);
END;
$$;
