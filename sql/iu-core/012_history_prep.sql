-- 012_history_prep.sql
--
-- What the partitioning (013) needs built beforehand, without holding up producers: the
-- claim index (event_domain, txid, id) on event_outbox, built CONCURRENTLY (on a table the
-- first generation built, it does not exist yet; a new install has it from 003, and this
-- does nothing). 013 then attaches the table as a partition and adopts the index, so the
-- conversion builds no index over the old rows while it holds its lock. A table migration
-- that runs outside a transaction (CREATE INDEX CONCURRENTLY cannot run inside one): each
-- statement is its own, and each can run again (an invalid index left by an interrupted
-- build is dropped first).

-- +goose NO TRANSACTION
-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_index i
                WHERE i.indexrelid = pg_catalog.to_regclass('public.event_outbox_domain_txid_idx') AND NOT i.indisvalid) THEN
        DROP INDEX public.event_outbox_domain_txid_idx;
    END IF;
END;
$$;
-- +goose StatementEnd
CREATE INDEX CONCURRENTLY IF NOT EXISTS event_outbox_domain_txid_idx ON public.event_outbox (event_domain, txid, id);

-- +goose Down
-- The index stays with the table that had it from 003 (a new install); on an adopted
-- table it goes (the rollback gives the legacy shape back).
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM iu_core.iu_adoption WHERE object = 'public.event_outbox')
       AND pg_catalog.to_regclass('public.event_outbox_domain_txid_idx') IS NOT NULL
       AND (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid = 'public.event_outbox'::pg_catalog.regclass) = 'r' THEN
        DROP INDEX public.event_outbox_domain_txid_idx;
    END IF;
END;
$$;
-- +goose StatementEnd
