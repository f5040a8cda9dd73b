CREATE OR REPLACE FUNCTION public.fn_job_kind_pause(p_job_kind text, p_reason text, p_actor text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
-- Pauses a job kind: from the moment this commits, fn_job_claim skips the kind (jobs
-- already running finish or expire as usual; enqueueing goes on). Pausing a paused kind
-- keeps the first pause and says already. Returns {"paused": true, "job_kind", "reason",
-- "paused_by", "paused_at", "already"}.
DECLARE
    v_row     public.job_kind_pause;
    v_already boolean := false;
BEGIN
    PERFORM iu_core.fn_iu_require_name('fn_job_kind_pause', 'p_job_kind', p_job_kind);
    IF iu_core.fn_iu_is_blank(p_reason) THEN
        RAISE EXCEPTION 'fn_job_kind_pause: p_reason required' USING ERRCODE = '22023',
            HINT = 'Say why, e.g. ''downstream outage, ticket OPS-1''.';
    END IF;
    PERFORM iu_core.fn_iu_require_name('fn_job_kind_pause', 'p_reason', p_reason, 1000);
    INSERT INTO public.job_kind_pause (job_kind, reason, paused_by)
    VALUES (p_job_kind, p_reason, iu_core.fn_queue_actor(p_actor, 'fn_job_kind_pause'))
    ON CONFLICT (job_kind) DO NOTHING
    RETURNING * INTO v_row;
    IF v_row.job_kind IS NULL THEN
        SELECT * INTO v_row FROM public.job_kind_pause WHERE job_kind = p_job_kind;
        v_already := true;
    END IF;
    RETURN jsonb_build_object('paused', true, 'job_kind', v_row.job_kind, 'reason', v_row.reason,
                              'paused_by', v_row.paused_by, 'paused_at', v_row.paused_at, 'already', v_already);
END;
$$;
