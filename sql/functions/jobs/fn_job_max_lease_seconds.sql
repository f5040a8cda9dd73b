CREATE OR REPLACE FUNCTION iu_core.fn_job_max_lease_seconds()
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- The longest a lease lives, counted from its claim, however often it is extended
    -- (fn_job_extend_lease caps the expiry there): 24 hours, the longest single lease a
    -- claim may ask for. A holder that needs more was stuck or is squatting: the reaper
    -- then requeues the job (or dead-letters it), as for any expired lease.
    SELECT 86400
$$;
