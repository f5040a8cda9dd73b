CREATE OR REPLACE FUNCTION iu_core.fn_job_dead_letter_guard()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        -- Only the resolution may change; what died, and why, is history.
        IF (NEW.id, NEW.job_id, NEW.job_kind, NEW.event_domain, NEW.job_snapshot, NEW.attempts, NEW.last_error, NEW.last_failed_at)
           IS NOT DISTINCT FROM
           (OLD.id, OLD.job_id, OLD.job_kind, OLD.event_domain, OLD.job_snapshot, OLD.attempts, OLD.last_error, OLD.last_failed_at) THEN
            RETURN NEW;
        END IF;
        RAISE EXCEPTION 'fn_job_dead_letter_guard: only resolved_at, resolution, resolved_by and replayed_job_id of a job dead letter may change'
            USING ERRCODE = 'IU001',
                  HINT = 'Resolve it with fn_job_dead_letter_resolve or replay it with fn_job_dead_letter_replay.';
    END IF;
    RAISE EXCEPTION 'fn_job_dead_letter_guard: job dead letters are resolved, never deleted: % rejected', TG_OP
        USING ERRCODE = 'IU001',
              HINT = 'Resolve it with fn_job_dead_letter_resolve or replay it with fn_job_dead_letter_replay.';
END;
$$;
