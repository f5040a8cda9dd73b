CREATE OR REPLACE FUNCTION iu_core.fn_job_dedupe_refuse_other(p_function text, p_dedupe_key text, p_job_kind text, p_event_domain text)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
-- The one refusal of an enqueue whose dedupe key is held by a live job of another kind or
-- domain (23505, raised; the caller's enqueue writes nothing). A dedupe key is unique while
-- its job is live (queued or running) across every kind and domain: one key space, so a
-- job that holds a key holds it for everyone. Before, the enqueue answered that job's id as
-- if it were the caller's: an enqueue of kind invoice with key order:42 while an email job
-- held order:42 created nothing, raised nothing, and the caller could not tell its job was
-- never queued (and any executor could squat a key another kind needs). Only a live job of
-- the same kind and domain is the caller's job again; for any other, the caller is told.
-- The holder is named as fn_job_dedupe_held_elsewhere finds it (called only on this rare
-- path, so the callers' common path reads nothing more).
DECLARE
    v_held record;
BEGIN
    SELECT h.job_kind, h.event_domain INTO v_held
      FROM iu_core.fn_job_dedupe_held_elsewhere(p_dedupe_key, p_job_kind, p_event_domain) h
     LIMIT 1;
    RAISE EXCEPTION '%: dedupe key % is held by a live job of kind % in domain %, not %/%',
        p_function, quote_literal(p_dedupe_key), quote_literal(coalesce(v_held.job_kind, '?')),
        quote_literal(coalesce(v_held.event_domain, '?')), p_job_kind, p_event_domain
        USING ERRCODE = '23505',
              HINT = format('A dedupe key is one key across every kind and domain while its job is queued or running: give each kind keys of its own, for example %L.',
                            p_job_kind || ':' || p_dedupe_key);
END;
$$;
