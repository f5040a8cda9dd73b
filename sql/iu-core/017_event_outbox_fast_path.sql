-- 017_event_outbox_fast_path.sql
--
-- The direct producer's fast path: event_outbox.id's default becomes a time-ordered uuid
-- (UUID version 7, RFC 9562) instead of gen_random_uuid(). The column stays uuid, the
-- primary key of every partition stays PRIMARY KEY (id); only how a new id is drawn changes.
--
-- Why: a random uuid lands on a random leaf of its partition's primary key, which outgrows
-- the CPU's caches as the log grows (and, with full_page_writes on, writes that leaf's full
-- image to the WAL once per checkpoint); a time-ordered one lands at the right edge, on a
-- page every producer has just touched. And gen_random_uuid() reads the strong random
-- generator (~8,600 instructions), more than this whole expression: ids must be unique,
-- not secret.
--
-- The expression is iu_core.fn_iu_event_new_id()'s (the id fn_iu_emit_event draws), written
-- inline with pg_catalog built-ins only: a default is evaluated in the inserting role's
-- rights, and direct producers may execute nothing of the package but the row rules.
-- Layout: 48 bits of Unix milliseconds, the version 7, 12 bits of the millisecond's
-- fraction (clock_timestamp() has microseconds, so ids of one session sort in the order
-- drawn to the microsecond), the variant 10, then random() scaled to 62 bits (52 random
-- bits and 10 zero bits; random() is seeded per session from the strong generator).
--
-- Uniqueness: two ids are equal only if drawn in the same microsecond with the same 52
-- random bits (about 2^-52 per pair of ids drawn in one microsecond). Such a pair in one
-- partition is refused by its primary key (23505): the second INSERT fails and its
-- transaction rolls back, so no event is silently lost or merged. Two rows in different
-- partitions (their txids straddle a partition bound in that microsecond) would both be
-- stored, as they could be with gen_random_uuid() at 2^-122; nothing keys on id alone
-- across partitions (the route worker reads (txid, id)). Producers may not name id (their
-- INSERT grant leaves it out, sql/README.md "Producers"); one that calls setseed() makes
-- its own session's ids predictable, not another session's, whose random() is seeded from
-- the strong generator, so it cannot make another producer's insert collide.
--
-- Every partition gets the default: ALTER TABLE ... ALTER COLUMN ... SET DEFAULT on the
-- partitioned parent recurses to every attached partition, the default one included
-- (a row INSERTed through the parent takes the parent's default; one INSERTed into a
-- partition by name, its own), and partitions built later copy the parent's
-- (fn_iu_partition_build: LIKE ... INCLUDING DEFAULTS). On an outbox not partitioned (an
-- install stopped before 013) it is the table's default. A catalog change only, no rewrite:
-- existing rows keep their ids; the lock is held for an instant.

-- +goose Up
ALTER TABLE public.event_outbox ALTER COLUMN id SET DEFAULT
    CAST(pg_catalog.overlay(pg_catalog.lpad(pg_catalog.to_hex(CAST(pg_catalog.date_part('epoch'::pg_catalog.text, pg_catalog.clock_timestamp())
                                                                   OPERATOR(pg_catalog.*) 4096000::pg_catalog.float8 AS pg_catalog.int8)),
                                            15, '0'::pg_catalog.text),
                            '7'::pg_catalog.text, 13, 0)
         OPERATOR(pg_catalog.||) pg_catalog.to_hex(CAST((pg_catalog.random() OPERATOR(pg_catalog.-) 2::pg_catalog.float8)
                                                        OPERATOR(pg_catalog.*) 4611686018427387904::pg_catalog.float8 AS pg_catalog.int8))
         AS pg_catalog.uuid);

-- +goose Down
-- The default 003 installed, on the parent and (recursing) every partition.
ALTER TABLE public.event_outbox ALTER COLUMN id SET DEFAULT gen_random_uuid();
