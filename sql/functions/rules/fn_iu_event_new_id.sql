CREATE OR REPLACE FUNCTION iu_core.fn_iu_event_new_id()
RETURNS uuid
LANGUAGE sql VOLATILE PARALLEL SAFE
AS $$
    -- A time-ordered event id, a UUID version 7 (RFC 9562): 48 bits of Unix milliseconds,
    -- the version 7, 12 bits of the millisecond's fraction (RFC 9562 method 3;
    -- clock_timestamp() has microseconds, so ids of one session sort in the order they were
    -- drawn, to the microsecond), the variant 10, then 62 bits: random() (52 random bits,
    -- exact in a float8) scaled to 2^62, so the last 10 are zero. The same expression is
    -- event_outbox.id's column default (017_event_outbox_fast_path.sql), which direct
    -- producers evaluate in their own rights (a default may call only what its writer may
    -- execute, so it is written there inline, built-ins only); fn_iu_emit_event draws its
    -- ids here.
    --
    -- Why time-ordered: an event's id lands at the right edge of its partition's primary
    -- key, on a page every producer has just touched, where a random uuid lands on a random
    -- leaf of an index that outgrows the CPU's caches with the log, and, with
    -- full_page_writes on, writes that leaf's full image
    -- to the WAL once per checkpoint. Why random() and not gen_random_uuid(): ids must be
    -- unique, not secret; the strong generator alone costs ~8,600 instructions, more than
    -- this whole expression. Two ids collide only if drawn in the same microsecond with the
    -- same 52 random bits (random() is seeded per session from the strong generator): in
    -- one partition its primary key refuses the second row (23505, the INSERT fails, its
    -- transaction rolls back) rather than merge or drop an event silently.
    --
    -- Inlined into its callers, so everything is pg_catalog-qualified and built-in.
    SELECT CAST(pg_catalog.overlay(pg_catalog.lpad(pg_catalog.to_hex(CAST(pg_catalog.date_part('epoch'::pg_catalog.text, pg_catalog.clock_timestamp())
                                                                        OPERATOR(pg_catalog.*) 4096000::pg_catalog.float8 AS pg_catalog.int8)),
                                                  15, '0'::pg_catalog.text),
                                   '7'::pg_catalog.text, 13, 0)
                OPERATOR(pg_catalog.||) pg_catalog.to_hex(CAST((pg_catalog.random() OPERATOR(pg_catalog.-) 2::pg_catalog.float8)
                                                               OPERATOR(pg_catalog.*) 4611686018427387904::pg_catalog.float8 AS pg_catalog.int8))
                AS pg_catalog.uuid)
$$;
