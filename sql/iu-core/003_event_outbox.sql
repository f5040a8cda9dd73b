-- 003_event_outbox.sql
--
-- The shared, append-only event log every consumer reads. A table migration.
--
-- Why a txid column: consumers keep their own position (the log has no delivery state).
-- A keyset on (created_at, id) skips rows that commit late, and an xmin cut-off stalls
-- every consumer behind any long transaction. Recording the inserting top-level
-- transaction id lets a consumer read "what became visible since my last snapshot"
-- (PgQ's snapshot-difference batching, see the route worker), so only a slow
-- transaction's own rows wait. 012 partitions the table by it.
--
-- The row rules (the columns' domains) call the rules of 002: payload hygiene
-- (iu_core.fn_iu_payload_is_clean), the package's reserved alert types and the txid rule
-- (iu_core.fn_iu_event_outbox_package_only). A producer that INSERTs directly is granted
-- EXECUTE on them (README, "Producers").

-- +goose Up
-- Refuse to install while a threat exists (an overload planted before the install would
-- otherwise be called by the very first run).
SELECT iu_core.fn_iu_require_trusted_search_path('iu-core install (003_event_outbox)', true);

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
-- (SQLSTATE 23514); hygiene keeps the name producers already see.
CREATE DOMAIN public.iu_event_name AS text
    CONSTRAINT iu_event_name_not_empty CHECK (VALUE <> '');

-- An event type: a name, and the stale-check's two alert types are reserved for the
-- package in every domain (the package writes them in domain system). The rule sits on the
-- type alone because a domain sees one column; it costs a single comparison per row, where
-- the row trigger that tested domain and type together cost a single-row INSERT about a
-- sixth of its instructions (its WHEN re-read for every statement, and a row trigger makes
-- PostgreSQL re-check the partition bounds of every routed row).
CREATE DOMAIN public.iu_event_type AS public.iu_event_name
    CONSTRAINT event_outbox_package_only CHECK (
        VALUE OPERATOR(pg_catalog.<>) ALL ('{queue_worker_silent,queue_worker_recovered}'::pg_catalog.text[])
        OR iu_core.fn_iu_event_outbox_package_only(VALUE));

CREATE DOMAIN public.iu_delivery_lane AS text
    CONSTRAINT iu_delivery_lane_valid CHECK (VALUE IN ('immediate', 'standard', 'batch'));

CREATE DOMAIN public.iu_event_severity AS text
    CONSTRAINT iu_event_severity_valid CHECK (VALUE IN ('debug', 'info', 'warning', 'critical'));

-- The hygiene constraint's refusing branch (fn_iu_event_outbox_refuse_payload) runs only for
-- a payload that breaks it: it refuses with the constraint, or inside fn_iu_emit_event with
-- that function's own error, so emit does not test hygiene a second time.
CREATE DOMAIN public.iu_safe_payload AS jsonb
    CONSTRAINT event_outbox_safe_payload_object CHECK (jsonb_typeof(VALUE) = 'object')
    CONSTRAINT event_outbox_safe_payload_hygiene CHECK (
        iu_core.fn_iu_payload_is_clean(VALUE) OR iu_core.fn_iu_event_outbox_refuse_payload(VALUE));

-- The inserting top-level transaction's id (its rule is added NOT VALID below the table).
CREATE DOMAIN public.iu_txid AS xid8;

CREATE TABLE public.event_outbox (
    id                  uuid              PRIMARY KEY DEFAULT gen_random_uuid(),
    event_domain        public.iu_event_name     NOT NULL,
    event_type          public.iu_event_type     NOT NULL,
    event_stream        public.iu_event_name     NOT NULL,
    delivery_lane       public.iu_delivery_lane  NOT NULL DEFAULT 'standard',
    event_severity      public.iu_event_severity NOT NULL DEFAULT 'info',
    event_subject_table text,
    event_subject_ref   text,
    safe_payload        public.iu_safe_payload   NOT NULL DEFAULT '{}'::jsonb,
    occurred_at         timestamptz       NOT NULL DEFAULT now(),
    created_at          timestamptz       NOT NULL DEFAULT now(),
    -- The inserting top-level transaction (pg_current_xact_id() is never a subxact id).
    txid                public.iu_txid           NOT NULL DEFAULT pg_current_xact_id()
);

-- The stored txid is always the inserting transaction's. A producer with INSERT could
-- otherwise pass its own: a past value hides the event from every consumer (it sorts before
-- their position and the backlog reads 0), a future one halts a whole domain. The rule is a
-- constraint of the column's domain rather than a table CHECK for the producers' insert rate
-- (a table CHECK is re-read from its stored text for every INSERT statement, see above).
-- Only the package may store another value (the refusing branch asks
-- fn_iu_event_outbox_package_only): the txid is the partition key (012), and PostgreSQL
-- checks every partition bound the package's maintenance writes against the key's domain.
-- It is added NOT VALID on purpose: pg_dump then writes it after the data, so a restore
-- loads the old rows (carrying the source cluster's txids) unchecked;
-- fn_iu_event_outbox_rebase_foreign_txids re-stamps them with its own transaction id.
-- Copying rows between tables of this column type (SELECT * into another outbox table) does
-- not re-check them: a value already of the domain is not coerced again.
ALTER DOMAIN public.iu_txid ADD CONSTRAINT event_outbox_txid_is_inserter
    CHECK (VALUE OPERATOR(pg_catalog.=) pg_catalog.pg_current_xact_id()
           OR iu_core.fn_iu_event_outbox_package_only(NULL::pg_catalog.text)) NOT VALID;

COMMENT ON TABLE public.event_outbox IS
    'Shared append-only event log. UPDATE, DELETE and TRUNCATE are rejected. Consumers keep their own cursor.';

COMMENT ON COLUMN public.event_outbox.txid IS
    'Top-level transaction that inserted the row; consumers batch by snapshot difference over it.';

-- The consumers' claim index: one domain, a txid range, paged by (txid, id).
CREATE INDEX event_outbox_domain_txid_idx ON public.event_outbox (event_domain, txid, id);

CREATE TRIGGER trg_event_outbox_append_only
    BEFORE UPDATE OR DELETE ON public.event_outbox
    FOR EACH ROW EXECUTE FUNCTION iu_core.fn_iu_event_outbox_append_only();

CREATE TRIGGER trg_event_outbox_no_truncate
    BEFORE TRUNCATE ON public.event_outbox
    FOR EACH STATEMENT EXECUTE FUNCTION iu_core.fn_iu_event_outbox_append_only();

-- +goose Down
DROP TABLE public.event_outbox;
DROP DOMAIN public.iu_txid;
DROP DOMAIN public.iu_safe_payload;
DROP DOMAIN public.iu_event_severity;
DROP DOMAIN public.iu_delivery_lane;
DROP DOMAIN public.iu_event_type;
DROP DOMAIN public.iu_event_name;
