-- 003_event_outbox.sql
--
-- The shared, append-only event log every consumer reads. A table migration: from the first
-- release on it is never edited again.
--
-- Created here on a new database; on a database the first generation built, its
-- event_outbox is adopted in place instead (iu_core.fn_iu_adopt_event_outbox: every row and
-- id kept, nothing rewritten, producers inserting throughout), after the install plan in 001
-- accepted it.
--
-- Why a txid column: consumers keep their own position (the log has no delivery state).
-- A keyset on (created_at, id) skips rows that commit late, and an xmin cut-off stalls
-- every consumer behind any long transaction. Recording the inserting top-level
-- transaction id lets a consumer read "what became visible since my last snapshot"
-- (PgQ's snapshot-difference batching, see the route worker), so only a slow
-- transaction's own rows wait. 013 partitions the table by it.
--
-- The row rules live in domains, not in table CHECKs, and that is for the producers' insert
-- rate. PostgreSQL re-reads and re-plans every CHECK of a table for each INSERT statement
-- (its stored expression is parsed from text, an inlined SQL function such as
-- fn_iu_payload_is_clean re-parsed from its source, its jsonpath literal re-read): with
-- single-row producers that cost more than the insert itself (the outbox's six CHECKs
-- made a single-row INSERT ~2.6x the instructions of the same table without them). A
-- domain's constraints are planned once per session and kept (the type cache), so the
-- same rules cost a few expression steps per row. They hold for every write path alike
-- (INSERT ... VALUES/SELECT, COPY, a restore), whatever the writer's search_path: the
-- expressions are stored resolved. The constraint names say which rule refused a row
-- (SQLSTATE 23514); hygiene keeps the name producers already see. The rules call the
-- rules of 002 (iu_core.fn_iu_payload_is_clean, iu_core.fn_iu_event_outbox_package_only):
-- a producer that INSERTs directly needs EXECUTE on them (PostgreSQL checks it for every
-- INSERT), granted by the DBA with its INSERT.
--
-- The domains are created bare and their rules added afterwards, NOT VALID: a column of an
-- adopted table takes a bare domain without a rewrite, and a rule added NOT VALID checks
-- every new row without re-reading the old ones (legacy rows may break the package's
-- stricter rules; an append-only log cannot be cleaned). On a new database the rules are
-- then validated (the table is empty), except the txid rule, NOT VALID on purpose (below).

-- +goose Up

-- Refuse to install while a threat exists (an overload planted before the install would
-- otherwise be found by the very first caller of the API). The install plan (001) refuses
-- it first, naming the fix; this is the package's own rule, checked as it creates the API.
SELECT iu_core.fn_iu_require_trusted_search_path('iu-core install (003_event_outbox)', true);

CREATE DOMAIN public.iu_event_name AS text;
-- An event type: a name, and the stale-check's two alert types are reserved for the
-- package in every domain (the package writes them in domain system). The rule sits on the
-- type alone because a domain sees one column; it costs a single comparison per row, where
-- the row trigger that tested domain and type together cost a single-row INSERT about a
-- sixth of its instructions (its WHEN re-read for every statement, and a row trigger makes
-- PostgreSQL re-check the partition bounds of every routed row).
CREATE DOMAIN public.iu_event_type AS public.iu_event_name;
CREATE DOMAIN public.iu_delivery_lane AS text;
CREATE DOMAIN public.iu_event_severity AS text;
CREATE DOMAIN public.iu_safe_payload AS jsonb;
-- The inserting top-level transaction's id.
CREATE DOMAIN public.iu_txid AS xid8;

-- +goose StatementBegin
DO $$
BEGIN
    IF to_regclass('public.event_outbox') IS NOT NULL THEN
        RAISE NOTICE 'iu-core: adopting the existing event_outbox: %', iu_core.fn_iu_adopt_event_outbox();
        RETURN;
    END IF;
    CREATE TABLE public.event_outbox (
        id                  uuid                     PRIMARY KEY DEFAULT gen_random_uuid(),
        event_domain        public.iu_event_name     NOT NULL,
        event_type          public.iu_event_type     NOT NULL,
        event_stream        public.iu_event_name     NOT NULL,
        delivery_lane       public.iu_delivery_lane  NOT NULL DEFAULT 'standard',
        event_severity      public.iu_event_severity NOT NULL DEFAULT 'info',
        event_subject_table text,
        event_subject_ref   text,
        safe_payload        public.iu_safe_payload   NOT NULL DEFAULT '{}'::jsonb,
        occurred_at         timestamptz              NOT NULL DEFAULT now(),
        created_at          timestamptz              NOT NULL DEFAULT now(),
        -- The inserting top-level transaction (pg_current_xact_id() is never a subxact id).
        txid                public.iu_txid           NOT NULL DEFAULT pg_current_xact_id()
    );
    -- The consumers' claim index: one domain, a txid range, paged by (txid, id). (An adopted
    -- table gets it in 012, built CONCURRENTLY.)
    CREATE INDEX event_outbox_domain_txid_idx ON public.event_outbox (event_domain, txid, id);
    CREATE TRIGGER trg_event_outbox_append_only
        BEFORE UPDATE OR DELETE ON public.event_outbox
        FOR EACH ROW EXECUTE FUNCTION iu_core.fn_iu_event_outbox_append_only();
    CREATE TRIGGER trg_event_outbox_no_truncate
        BEFORE TRUNCATE ON public.event_outbox
        FOR EACH STATEMENT EXECUTE FUNCTION iu_core.fn_iu_event_outbox_append_only();
END;
$$;
-- +goose StatementEnd

ALTER DOMAIN public.iu_event_name ADD CONSTRAINT iu_event_name_not_empty CHECK (VALUE <> '') NOT VALID;
ALTER DOMAIN public.iu_event_type ADD CONSTRAINT event_outbox_package_only CHECK (
        VALUE OPERATOR(pg_catalog.<>) ALL ('{queue_worker_silent,queue_worker_recovered}'::pg_catalog.text[])
        OR iu_core.fn_iu_event_outbox_package_only(VALUE)) NOT VALID;
ALTER DOMAIN public.iu_delivery_lane ADD CONSTRAINT iu_delivery_lane_valid CHECK (VALUE IN ('immediate', 'standard', 'batch')) NOT VALID;
ALTER DOMAIN public.iu_event_severity ADD CONSTRAINT iu_event_severity_valid CHECK (VALUE IN ('debug', 'info', 'warning', 'critical')) NOT VALID;
-- The hygiene constraint's refusing branch (fn_iu_event_outbox_refuse_payload) runs only for
-- a payload that breaks it: it refuses with the constraint, or inside fn_iu_emit_event with
-- that function's own error, so emit does not test hygiene a second time.
ALTER DOMAIN public.iu_safe_payload ADD CONSTRAINT event_outbox_safe_payload_object CHECK (jsonb_typeof(VALUE) = 'object') NOT VALID;
ALTER DOMAIN public.iu_safe_payload ADD CONSTRAINT event_outbox_safe_payload_hygiene CHECK (
        iu_core.fn_iu_payload_is_clean(VALUE) OR iu_core.fn_iu_event_outbox_refuse_payload(VALUE)) NOT VALID;
-- The stored txid is always the inserting transaction's. A producer with INSERT could
-- otherwise pass its own: a past value hides the event from every consumer (it sorts before
-- their position and the backlog reads 0), a future one halts a whole domain. Only the
-- package may store another value (the refusing branch asks fn_iu_event_outbox_package_only):
-- the txid is the partition key (013), and PostgreSQL checks every partition bound the
-- package's maintenance writes against the key's domain. It stays NOT VALID on purpose:
-- pg_dump then writes it after the data, so a restore loads the old rows (carrying the
-- source cluster's txids) unchecked; fn_iu_event_outbox_rebase_foreign_txids re-stamps them
-- with its own transaction id. (An adopted log's rows carry 3, 4, ...: see the adoption.)
-- Copying rows between tables of this column type (SELECT * into another outbox table) does
-- not re-check them: a value already of the domain is not coerced again.
ALTER DOMAIN public.iu_txid ADD CONSTRAINT event_outbox_txid_is_inserter
    CHECK (VALUE OPERATOR(pg_catalog.=) pg_catalog.pg_current_xact_id()
           OR iu_core.fn_iu_event_outbox_package_only(NULL::pg_catalog.text)) NOT VALID;

-- +goose StatementBegin
DO $$
BEGIN
    -- A new, empty log: its rules hold for every row, so say so (validating is instant).
    IF NOT EXISTS (SELECT 1 FROM iu_core.iu_adoption WHERE object = 'public.event_outbox') THEN
        ALTER DOMAIN public.iu_event_name VALIDATE CONSTRAINT iu_event_name_not_empty;
        ALTER DOMAIN public.iu_event_type VALIDATE CONSTRAINT event_outbox_package_only;
        ALTER DOMAIN public.iu_delivery_lane VALIDATE CONSTRAINT iu_delivery_lane_valid;
        ALTER DOMAIN public.iu_event_severity VALIDATE CONSTRAINT iu_event_severity_valid;
        ALTER DOMAIN public.iu_safe_payload VALIDATE CONSTRAINT event_outbox_safe_payload_object;
        ALTER DOMAIN public.iu_safe_payload VALIDATE CONSTRAINT event_outbox_safe_payload_hygiene;
    END IF;
END;
$$;
-- +goose StatementEnd

COMMENT ON TABLE public.event_outbox IS
    'Shared append-only event log. UPDATE, DELETE and TRUNCATE are rejected. Consumers keep their own cursor.';
COMMENT ON COLUMN public.event_outbox.txid IS
    'Top-level transaction that inserted the row; consumers batch by snapshot difference over it.';

-- +goose Down
-- History is never destroyed by a rollback: an adopted log goes back to its legacy shape
-- with every row (those written since included); a log the package created goes only when
-- it is empty (or when the rollback is told to drop it: iu.drop_history = 'event_outbox').
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM iu_core.iu_adoption WHERE object = 'public.event_outbox') THEN
        PERFORM iu_core.fn_iu_unadopt('public.event_outbox');
    ELSE
        PERFORM iu_core.fn_iu_require_empty_history_at(3);
        DROP TABLE public.event_outbox;
    END IF;
END;
$$;
-- +goose StatementEnd
DROP DOMAIN public.iu_txid;
DROP DOMAIN public.iu_safe_payload;
DROP DOMAIN public.iu_event_severity;
DROP DOMAIN public.iu_delivery_lane;
DROP DOMAIN public.iu_event_type;
DROP DOMAIN public.iu_event_name;
