CREATE OR REPLACE FUNCTION iu_core.fn_job_dedupe_held_elsewhere(p_dedupe_key text, p_job_kind text, p_event_domain text)
RETURNS TABLE (job_id uuid, job_kind text, event_domain text)
LANGUAGE sql STABLE
AS $$
    -- The live job (queued or running) of another kind or domain that holds p_dedupe_key, if
    -- any: a dedupe key is one key across every kind and domain while its job is live, and
    -- an enqueue of p_job_kind in p_event_domain with that key is refused while this row
    -- exists (fn_job_dedupe_refuse_other). Asked before an enqueue whose refusal the caller
    -- answers instead of raising: a dead letter's replay (fn_job_dead_letter_replay) and the
    -- bulk replay's selection, which passes such dead letters by until the key is free (one
    -- probe of job_queue's live-key index). No row for a NULL key.
    -- Inlinable SQL, owner only.
    SELECT j.job_id, j.job_kind, j.event_domain
      FROM public.job_queue j
     WHERE j.dedupe_key = p_dedupe_key
       AND j.status IN ('queued', 'running')
       AND (j.job_kind <> p_job_kind OR j.event_domain <> p_event_domain)
$$;
