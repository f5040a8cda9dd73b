CREATE OR REPLACE FUNCTION iu_core.fn_job_new_id()
RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$
    -- A time-ordered job id: 48 bits of Unix milliseconds, the version nibble 7, then 76
    -- bits of a hash of random(). Why time-ordered: ids drawn in enqueue order land at the
    -- right edge of the primary key instead of on random pages, so enqueueing stays as
    -- cheap with a million rows in the table as with none. Why random() and not
    -- gen_random_uuid(): ids must be unique, not secret, and the strong generator costs
    -- several times more per row; within one millisecond the random part (seeded per
    -- session from the strong generator) makes a collision vanishingly unlikely, and the
    -- primary key would refuse one rather than merge two jobs.
    SELECT (lpad(to_hex(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0')
            || '7' || substr(md5(random()::text), 1, 19))::uuid
$$;
