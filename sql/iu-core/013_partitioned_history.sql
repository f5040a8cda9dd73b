-- 013_partitioned_history.sql
--
-- event_outbox and iu_route_attempt become RANGE-partitioned by transaction id, so history
-- leaves in whole partitions (retention, fn_iu_retention_run) while single rows are still
-- never updated or deleted. A table migration.
--
-- The conversion rewrites nothing: each table is renamed <table>_legacy, a partitioned
-- parent is created under the old name with the same columns, defaults, CHECKs, comments,
-- grants and triggers, and the old table is ATTACHed as the partition FROM (MINVALUE) TO
-- (B). B is taken once the migration holds its ACCESS EXCLUSIVE locks: the xmax of the
-- snapshot of that moment (or the migration's own txid + 1, if higher). Every transaction
-- that inserted a row has ended by then, so every row is below B (producers insert
-- throughout the adoption, with txids above the migration's own: B cannot be taken
-- earlier), and a transaction older than B that inserts later still lands in the legacy
-- range. sql/functions/history/README.md tells
-- why the key is the txid and what the DEFAULT partitions are for.
--
-- Down gives the unpartitioned tables back with every row: the legacy partitions are
-- detached, renamed back, and the rows of every later partition are copied into them.

-- +goose Up
-- The retention keys. The partition width is chosen at install: the session setting
-- iu.partition_txids (PGOPTIONS='-c iu.partition_txids=N', or iu-runner migrate up
-- --partition-txids N) wins; without it a retention.partition_txids set before this
-- migration runs is kept; else 100,000,000. The conversion's first partitions use it.
INSERT INTO public.dot_config (key, value, description) VALUES
    ('retention.event_outbox_days', '',
     'Days an event_outbox partition is kept after it closed (every txid in it finished). Empty or missing: keep forever.'),
    ('retention.route_attempt_days', '',
     'Days an iu_route_attempt partition is kept after it closed; never before its events'' partition is gone. Empty or missing: keep forever.'),
    ('retention.partition_txids', '100000000',
     'Width of a history partition in transaction ids (event_outbox and iu_route_attempt share the bounds). Keep retention / width under ~100 partitions.')
ON CONFLICT (key) DO NOTHING;

-- +goose StatementBegin
DO $$
DECLARE
    v_raw text := btrim(coalesce(current_setting('iu.partition_txids', true), ''));
BEGIN
    IF v_raw = '' THEN
        RETURN;
    END IF;
    IF v_raw !~ '^[0-9]{1,15}$' OR v_raw::bigint NOT BETWEEN 1000 AND 1000000000000 THEN
        RAISE EXCEPTION '013_partitioned_history: iu.partition_txids = % is not a whole number from 1000 to 1000000000000', quote_literal(v_raw)
            USING ERRCODE = '22023',
                  HINT = 'The partition width in transaction ids: PGOPTIONS=''-c iu.partition_txids=<number>'' or iu-runner migrate up --partition-txids <number>.';
    END IF;
    UPDATE public.dot_config SET value = v_raw WHERE key = 'retention.partition_txids';
END;
$$;
-- +goose StatementEnd

-- The partition-maintenance lock: fn_iu_partition_maintain and fn_iu_retention_run take it
-- (SHARE UPDATE EXCLUSIVE, which conflicts with itself and not with a plain read), so one of
-- them changes the partitions at a time. A table lock on a table of the package's own
-- schema, not an advisory lock: any login can take any advisory lock, and one that held this
-- key stalled maintenance and retention for as long as it liked; this table nobody else may
-- name, and it is never written, so autovacuum has nothing to do on it. Its holder is named
-- in the busy answer and in v_queue_health (iu_core.fn_iu_history_lock_holder).
CREATE TABLE iu_core.iu_history_lock ();
REVOKE ALL ON iu_core.iu_history_lock FROM PUBLIC;
COMMENT ON TABLE iu_core.iu_history_lock IS
    'The partition-maintenance lock (LOCK TABLE ... IN SHARE UPDATE EXCLUSIVE MODE by fn_iu_partition_maintain and fn_iu_retention_run). Never written.';

-- The partitions of both history tables, with the moment each was first seen closed.
-- Bookkeeping, not history: a dropped partition's row is removed here and recorded in
-- iu_retention_ledger. The default partitions are not listed (never dropped).
CREATE TABLE public.iu_history_partition (
    partition_name text        PRIMARY KEY,
    table_name     text        NOT NULL CHECK (table_name IN ('event_outbox', 'iu_route_attempt')),
    lower_txid     xid8,       -- NULL: MINVALUE (the legacy partition)
    upper_txid     xid8        NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    closed_at      timestamptz  -- first seen with upper_txid <= xmin of a snapshot: every txid in it finished
);

COMMENT ON TABLE public.iu_history_partition IS
    'Partitions of event_outbox and iu_route_attempt (txid ranges) and when each closed; kept by fn_iu_partition_maintain.';

CREATE TABLE public.iu_retention_ledger (
    id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    table_name     text        NOT NULL,
    partition_name text        NOT NULL,
    lower_txid     xid8,
    upper_txid     xid8        NOT NULL,
    row_count      bigint      NOT NULL,
    closed_at      timestamptz,
    retention_days integer     NOT NULL,
    dropped_at     timestamptz NOT NULL DEFAULT now(),
    dropped_by     text        NOT NULL,
    dropped_session_user text  NOT NULL DEFAULT session_user
);

COMMENT ON TABLE public.iu_retention_ledger IS
    'One row per history partition dropped by fn_iu_retention_run: which range, how many rows, by whom, when. Append-only.';

CREATE TRIGGER trg_iu_retention_ledger_immutable
    BEFORE UPDATE OR DELETE ON public.iu_retention_ledger
    FOR EACH ROW EXECUTE FUNCTION iu_core.fn_iu_retention_ledger_immutable();

CREATE TRIGGER trg_iu_retention_ledger_no_truncate
    BEFORE TRUNCATE ON public.iu_retention_ledger
    FOR EACH STATEMENT EXECUTE FUNCTION iu_core.fn_iu_retention_ledger_immutable();

-- ---------------------------------------------------------------------------------------
-- The conversion. For each history table, in one block:
--   1. read its triggers (pg_get_triggerdef), table comment and ACL; drop the triggers
--   2. rename it <table>_legacy, its claim index / keys <...>_legacy_...
--   3. create the partitioned parent under the old name: LIKE the old table (columns,
--      defaults, identity, column comments), every CHECK as written (pg_get_constraintdef
--      keeps NOT VALID), the partition-wide keys, the comment and the grants
--   4. recreate the triggers on the parent; attach the old table FROM (MINVALUE) TO (B)
--   5. the default partition and the first partitions above B
-- iu_route_attempt's identity moves to the parent, continuing where the old one stopped.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
DO $$
DECLARE
    v_b        xid8;
    v_t        text;
    v_trig     text[];
    v_comment  text;
    r          record;
    v_next_id  bigint;
    v_pkey     text;
    v_idx      text[];
BEGIN
    -- Both tables, in 200 ms attempts (producers never queue long behind the request);
    -- everything below is catalog work but for ATTACH's check of the old rows' bounds.
    PERFORM iu_core.fn_iu_adopt_lock(ARRAY['public.iu_route_attempt'::regclass, 'public.event_outbox'::regclass]);
    -- The bound, now that nothing else can insert: every transaction that wrote a row has
    -- ended (an inserter holds a lock the one above waits for), so each row's txid is below
    -- this snapshot's xmax, or is this migration's own.
    v_b := greatest(pg_snapshot_xmax(pg_current_snapshot()),
                    (pg_current_xact_id()::text::numeric + 1)::text::xid8);
    -- Views reading them would keep reading the renamed tables: set aside, recreated below
    -- on the partitioned parents (so a view on event_outbox sees every new row).
    PERFORM iu_core.fn_iu_adopt_detach_views(ARRAY['public.event_outbox'::regclass, 'public.iu_route_attempt'::regclass]);
    FOREACH v_t IN ARRAY ARRAY['event_outbox', 'iu_route_attempt'] LOOP
        SELECT coalesce(array_agg(pg_get_triggerdef(t.oid) ORDER BY t.tgname), '{}') INTO v_trig
          FROM pg_trigger t WHERE t.tgrelid = v_t::regclass AND NOT t.tgisinternal;
        FOR r IN SELECT t.tgname FROM pg_trigger t WHERE t.tgrelid = v_t::regclass AND NOT t.tgisinternal LOOP
            EXECUTE format('DROP TRIGGER %I ON %I', r.tgname, v_t);
        END LOOP;
        v_comment := obj_description(v_t::regclass, 'pg_class');

        -- Indexes a user added (not the package's keys): kept on the old rows, and given to
        -- the parent, so every partition gets them.
        SELECT coalesce(array_agg(ic.relname::text || E'\t' || pg_get_indexdef(i.indexrelid)), '{}') INTO v_idx
          FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
         WHERE i.indrelid = v_t::regclass AND NOT i.indisunique AND NOT i.indisprimary
           AND ic.relname NOT IN ('event_outbox_domain_txid_idx');
        SELECT c.conname INTO v_pkey FROM pg_constraint c WHERE c.conrelid = v_t::regclass AND c.contype = 'p';
        EXECUTE format('ALTER TABLE %I RENAME TO %I', v_t, v_t || '_legacy');
        EXECUTE format('ALTER TABLE %I RENAME CONSTRAINT %I TO %I', v_t || '_legacy', v_pkey, v_t || '_legacy_pkey');
        IF v_t = 'event_outbox' THEN
            ALTER INDEX event_outbox_domain_txid_idx RENAME TO event_outbox_legacy_domain_txid_idx;
            CREATE TABLE public.event_outbox (LIKE public.event_outbox_legacy INCLUDING DEFAULTS INCLUDING COMMENTS)
                PARTITION BY RANGE (txid);
        ELSE
            ALTER TABLE public.iu_route_attempt_legacy RENAME CONSTRAINT iu_route_attempt_key_attempt_uq TO iu_route_attempt_legacy_key_attempt_uq;
            CREATE TABLE public.iu_route_attempt (LIKE public.iu_route_attempt_legacy INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING COMMENTS)
                PARTITION BY RANGE (event_txid);
            SELECT coalesce(max(a.id), 0) + 1 INTO v_next_id FROM public.iu_route_attempt_legacy a;
            v_next_id := greatest(v_next_id, (SELECT s.last_value + 1 FROM pg_sequences s
                                               WHERE s.schemaname = 'public' AND s.sequencename = 'iu_route_attempt_id_seq'
                                                 AND s.last_value IS NOT NULL));
            -- The old sequence goes (PostgreSQL 17+ refuses a partition with its own identity);
            -- the parent's continues after it.
            ALTER TABLE public.iu_route_attempt_legacy ALTER COLUMN id DROP IDENTITY;
            EXECUTE format('ALTER TABLE iu_route_attempt ALTER COLUMN id RESTART WITH %s', v_next_id);
            EXECUTE format('ALTER SEQUENCE %s RENAME TO iu_route_attempt_id_seq',
                           pg_get_serial_sequence('iu_route_attempt', 'id'));
        END IF;
        FOR r IN SELECT c.conname, pg_get_constraintdef(c.oid) AS def
                   FROM pg_constraint c WHERE c.conrelid = (v_t || '_legacy')::regclass AND c.contype = 'c'
                  ORDER BY c.conname LOOP
            EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I %s', v_t, r.conname, r.def);
        END LOOP;
        IF v_t = 'event_outbox' THEN
            CREATE INDEX event_outbox_domain_txid_idx ON public.event_outbox (event_domain, txid, id);
        ELSE
            -- The re-scan guard, exact per partition (all attempts of one event share event_txid).
            ALTER TABLE public.iu_route_attempt ADD CONSTRAINT iu_route_attempt_key_attempt_uq
                UNIQUE (idempotency_key, attempt_no, event_txid);
        END IF;
        IF v_comment IS NOT NULL THEN
            EXECUTE format('COMMENT ON TABLE %I IS %L', v_t, v_comment);
        END IF;
        FOR r IN SELECT a.privilege_type, a.grantee, a.is_grantable
                   FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a
                  WHERE c.oid = (v_t || '_legacy')::regclass AND a.grantee <> c.relowner LOOP
            EXECUTE format('GRANT %s ON %I TO %s%s', r.privilege_type, v_t,
                           CASE WHEN r.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.grantee::regrole::text) END,
                           CASE WHEN r.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
        -- Column-level grants too (a producer granted INSERT on some columns only).
        FOR r IN SELECT t.attname, a.privilege_type, a.grantee, a.is_grantable
                   FROM pg_attribute t CROSS JOIN LATERAL aclexplode(t.attacl) a
                  WHERE t.attrelid = (v_t || '_legacy')::regclass AND t.attacl IS NOT NULL
                    AND a.grantee <> (SELECT relowner FROM pg_class WHERE oid = (v_t || '_legacy')::regclass) LOOP
            EXECUTE format('GRANT %s (%I) ON %I TO %s%s', r.privilege_type, r.attname, v_t,
                           CASE WHEN r.grantee = 0 THEN 'PUBLIC' ELSE quote_ident(r.grantee::regrole::text) END,
                           CASE WHEN r.is_grantable THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
        FOREACH v_comment IN ARRAY v_trig LOOP
            EXECUTE v_comment;     -- the definition names the table by its old (now the parent's) name
        END LOOP;

        -- (each definition was read before the rename: it names the table the parent is now;
        -- ATTACH below finds the old index matching it and adopts it: nothing is built)
        FOR r IN SELECT split_part(x, E'\t', 1) AS name, split_part(x, E'\t', 2) AS def FROM unnest(v_idx) x LOOP
            EXECUTE regexp_replace(r.def, '^CREATE INDEX \S+ ON ', format('CREATE INDEX %I ON ', 'p_' || r.name));
        END LOOP;
        EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)', v_t, v_t || '_legacy', v_b);
        EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', v_t || '_default', v_t);
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY (id)', v_t || '_default', v_t || '_default_pkey');
        PERFORM iu_core.fn_iu_partition_guard(v_t::regclass, (v_t || '_legacy')::regclass);
        PERFORM iu_core.fn_iu_partition_guard(v_t::regclass, (v_t || '_default')::regclass);
        INSERT INTO public.iu_history_partition (partition_name, table_name, lower_txid, upper_txid)
        VALUES (v_t || '_legacy', v_t, NULL, v_b);
    END LOOP;
    EXECUTE format('ALTER INDEX %s RENAME TO event_outbox_default_domain_txid_idx',
                   (SELECT i.inhrelid::regclass FROM pg_inherits i JOIN pg_index x ON x.indexrelid = i.inhrelid
                     WHERE i.inhparent = 'event_outbox_domain_txid_idx'::regclass
                       AND x.indrelid = 'event_outbox_default'::regclass));
    COMMENT ON COLUMN public.iu_route_attempt.event_txid IS
        'The routed event''s txid: the partition key, so every attempt of one event lands in one partition.';
    PERFORM iu_core.fn_iu_adopt_restore_views();
END;
$$;
-- +goose StatementEnd

SELECT public.fn_iu_partition_maintain();

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    v_t       text;
    v_trig    text[];
    v_def     text;
    v_comment text;
    r         record;
    v_next_id bigint;
BEGIN
    PERFORM iu_core.fn_iu_adopt_lock(ARRAY['public.iu_route_attempt'::regclass, 'public.event_outbox'::regclass]);
    PERFORM iu_core.fn_iu_adopt_detach_views(ARRAY['public.event_outbox'::regclass, 'public.iu_route_attempt'::regclass]);
    FOREACH v_t IN ARRAY ARRAY['event_outbox', 'iu_route_attempt'] LOOP
        IF to_regclass(v_t || '_legacy') IS NULL THEN
            RAISE EXCEPTION '013 down: partition %_legacy was dropped by retention; the unpartitioned shape cannot be restored from it', v_t
                USING ERRCODE = '0A000',
                      HINT = 'Create the old table by hand from one remaining partition, or restore from a backup.';
        END IF;
        SELECT coalesce(array_agg(pg_get_triggerdef(t.oid) ORDER BY t.tgname), '{}') INTO v_trig
          FROM pg_trigger t WHERE t.tgrelid = v_t::regclass AND NOT t.tgisinternal AND t.tgparentid = 0;
        v_comment := obj_description(v_t::regclass, 'pg_class');
        FOR r IN SELECT t.tgname FROM pg_trigger t WHERE t.tgrelid = v_t::regclass AND NOT t.tgisinternal AND t.tgparentid = 0 LOOP
            EXECUTE format('DROP TRIGGER %I ON %I', r.tgname, v_t);
        END LOOP;
        EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', v_t, v_t || '_legacy');
        -- the per-partition TRUNCATE guards of the legacy table (recreated from the parent's below)
        FOR r IN SELECT t.tgname FROM pg_trigger t WHERE t.tgrelid = (v_t || '_legacy')::regclass AND NOT t.tgisinternal LOOP
            EXECUTE format('DROP TRIGGER %I ON %I', r.tgname, v_t || '_legacy');
        END LOOP;
        -- every later row back into the old table, as it was (the txid rule of the column's
        -- domain does not re-check them: the values are of the domain already)
        IF v_t = 'event_outbox' THEN
            INSERT INTO public.event_outbox_legacy SELECT * FROM public.event_outbox;
        ELSE
            INSERT INTO public.iu_route_attempt_legacy SELECT * FROM public.iu_route_attempt;
            SELECT greatest(coalesce(max(a.id), 0) + 1,
                            coalesce((SELECT s.last_value + 1 FROM pg_sequences s
                                       WHERE s.schemaname = 'public' AND s.sequencename = 'iu_route_attempt_id_seq'), 1))
              INTO v_next_id FROM public.iu_route_attempt_legacy a;
            -- the parent's key, built on the old rows at ATTACH, stayed behind on detach
            FOR r IN SELECT c.conname FROM pg_constraint c
                      WHERE c.conrelid = 'iu_route_attempt_legacy'::regclass AND c.contype = 'u'
                        AND c.conname <> 'iu_route_attempt_legacy_key_attempt_uq' LOOP
                EXECUTE format('ALTER TABLE iu_route_attempt_legacy DROP CONSTRAINT %I', r.conname);
            END LOOP;
        END IF;
        EXECUTE format('DROP TABLE %I', v_t);     -- the parent with its later partitions
        EXECUTE format('ALTER TABLE %I RENAME TO %I', v_t || '_legacy', v_t);
        EXECUTE format('ALTER TABLE %I RENAME CONSTRAINT %I TO %I', v_t, v_t || '_legacy_pkey', v_t || '_pkey');
        IF v_t = 'event_outbox' THEN
            ALTER INDEX event_outbox_legacy_domain_txid_idx RENAME TO event_outbox_domain_txid_idx;
        ELSE
            ALTER TABLE public.iu_route_attempt RENAME CONSTRAINT iu_route_attempt_legacy_key_attempt_uq TO iu_route_attempt_key_attempt_uq;
            -- (PostgreSQL 17+ removes the parent's identity from a detached partition; older
            -- versions never gave it one.)
            IF (SELECT a.attidentity FROM pg_attribute a
                 WHERE a.attrelid = 'iu_route_attempt'::regclass AND a.attname = 'id') = '' THEN
                ALTER TABLE public.iu_route_attempt ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY;
            END IF;
            EXECUTE format('ALTER TABLE iu_route_attempt ALTER COLUMN id RESTART WITH %s', v_next_id);
        END IF;
        FOREACH v_def IN ARRAY v_trig LOOP
            EXECUTE v_def;
        END LOOP;
        IF v_comment IS NOT NULL THEN
            EXECUTE format('COMMENT ON TABLE %I IS %L', v_t, v_comment);
        END IF;
    END LOOP;
PERFORM iu_core.fn_iu_adopt_restore_views();
END;
$$;
-- +goose StatementEnd

SELECT iu_core.fn_iu_forget_config(ARRAY['retention.event_outbox_days', 'retention.route_attempt_days', 'retention.partition_txids']);
DROP TABLE public.iu_retention_ledger;
DROP TABLE public.iu_history_partition;
DROP TABLE iu_core.iu_history_lock;
