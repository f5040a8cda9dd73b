CREATE OR REPLACE FUNCTION public.fn_job_kind_resume(p_job_kind text, p_actor text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
-- Resumes a paused job kind: claims take it again. Returns {"resumed": true, "job_kind",
-- "resumed_by", "paused_for_seconds"}, or {"resumed": false, "reason": "not_paused"}.
DECLARE
    v_row public.job_kind_pause;
BEGIN
    PERFORM iu_core.fn_iu_require_name('fn_job_kind_resume', 'p_job_kind', p_job_kind);
    DELETE FROM public.job_kind_pause WHERE job_kind = p_job_kind RETURNING * INTO v_row;
    IF v_row.job_kind IS NULL THEN
        RETURN jsonb_build_object('resumed', false, 'reason', 'not_paused', 'job_kind', p_job_kind);
    END IF;
    RETURN jsonb_build_object('resumed', true, 'job_kind', p_job_kind, 'resumed_by', iu_core.fn_queue_actor(p_actor, 'fn_job_kind_resume'),
                              'paused_reason', v_row.reason,
                              'paused_for_seconds', floor(extract(epoch FROM now() - v_row.paused_at))::bigint);
END;
$$;
