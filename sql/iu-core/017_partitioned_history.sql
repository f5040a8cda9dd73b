-- 017_partitioned_history.sql
--
-- Retention without breaking append-only: event_outbox and iu_route_attempt become
-- RANGE-partitioned by transaction id, so history leaves in whole partitions (DROP TABLE of
-- one partition) while single rows are still never updated or deleted.
--
-- Adds:
--   fn_iu_partition_maintain()                 dot_executor, workflow_admin: partitions ahead,
--                                              closes recorded (the runner calls it)
--   fn_iu_retention_run(p_dry_run DEFAULT true) workflow_admin: drops what retention allows
--   iu_history_partition                       the partitions of both tables, with closed_at
--   iu_retention_ledger                        append-only record of every drop
--   dot_config retention.event_outbox_days, retention.route_attempt_days (missing or empty:
--   keep forever, the default), retention.partition_txids (partition width)
--
-- Why partition by txid and not by time: the worker's claim reads one domain over a txid
-- range, (event_domain, txid, id), so txid ranges prune the claim, the backlog count and
-- the retention check to the partitions a window touches; a time key would make every
-- claim visit every partition. iu_route_attempt is partitioned by event_txid, the routed
-- EVENT's txid, over the same bounds: every attempt of one event (the decision, each replay)
-- lands in one partition, so the partition-local UNIQUE (idempotency_key, attempt_no,
-- event_txid) is exactly the old global UNIQUE (idempotency_key, attempt_no): a re-scan
-- after a cursor reset still writes nothing twice.
--
-- The conversion of an existing, populated install rewrites nothing: each old table is
-- renamed (<table>_legacy), a partitioned parent is created under the old name with the same
-- columns, defaults, CHECKs, comments, grants and triggers, and the old table is ATTACHed as
-- the partition FROM (MINVALUE) TO (B). B is this migration's own txid + 1: while the
-- migration holds its ACCESS EXCLUSIVE locks nothing inserts, and a transaction older than
-- the migration that inserts later has a txid < B, so it still lands in the legacy range.
-- ATTACH reads the old rows once to check the bound (a scan, no rewrite) and adopts the
-- existing claim index; the one index it builds is iu_route_attempt's partitioned unique
-- key over the old attempts (measured: 1M outbox rows + 1M attempts convert in ~3 s).
--
-- Keys on the parent. A PRIMARY KEY or UNIQUE on a partitioned table must contain the
-- partition key, and building one over the old rows would be the expensive part of the
-- conversion, so event_outbox's "id is unique" becomes per partition: every partition has
-- its own PRIMARY KEY (id) (the legacy one keeps its old one). Ids are gen_random_uuid();
-- a producer that passes an old id explicitly in a later partition gets its row stored, and
-- its idempotency key (fn_iu_route_idempotency_key: worker, route, event id) equals the old
-- event's: the worker then sees the key as already attempted and routes the NEW row as a
-- duplicate. So a reused id hides only the reuser's own new event; it cannot hide another
-- producer's event, whose id it would have to know before that event commits (an id is
-- visible only after commit, and the original, older txid is routed first).
--
-- DEFAULT partitions: both tables have one, so a producer's insert never fails when
-- maintenance has not run for a while (nothing is lost: the rows land in <table>_default).
-- Maintenance then creates new partitions only above the highest txid in the default
-- partitions (so it never has to move a row), and v_queue_health-style callers can see the
-- default filling up in fn_iu_partition_maintain's answer (default_rows) and in the
-- 'ahead_txids' margin. Rows in a default partition are kept until an operator moves them
-- (they are never dropped by retention).
--
-- The rebase of restored rows (fn_iu_event_outbox_rebase_foreign_txids) now moves rows
-- between partitions; the append-only guard (001) lets exactly that DELETE half through.
--
-- Triggers, grants and comments are moved generically (read from the catalog), so whatever
-- triggers earlier migrations put on the tables (the append-only guards, the NOTIFY bridge
-- with its transition table, which a partition may not carry)
-- end up on the parents, and Down puts them back. Row triggers of a parent are cloned onto
-- every partition by PostgreSQL; statement-level TRUNCATE guards are not, so each partition
-- gets a copy (fn_iu_partition_guard): TRUNCATE of a single partition stays refused.
--
-- Down gives the old unpartitioned tables back with every row: the legacy partitions are
-- detached, renamed back, and the rows of every later partition are copied into them.

-- +goose Up

INSERT INTO dot_config (key, value, description) VALUES
    ('retention.event_outbox_days', '',
     'Days an event_outbox partition is kept after it closed (every txid in it finished). Empty or missing: keep forever.'),
    ('retention.route_attempt_days', '',
     'Days an iu_route_attempt partition is kept after it closed; never before its events'' partition is gone. Empty or missing: keep forever.'),
    ('retention.partition_txids', '100000000',
     'Width of a history partition in transaction ids (event_outbox and iu_route_attempt share the bounds). Keep retention / width under ~100 partitions.')
ON CONFLICT (key) DO NOTHING;

-- The partitions of both history tables, with the moment each was first seen closed.
-- Bookkeeping, not history: a dropped partition's row is removed here and recorded in
-- iu_retention_ledger. The default partitions are not listed (never dropped).
CREATE TABLE iu_history_partition (
    partition_name text        PRIMARY KEY,
    table_name     text        NOT NULL CHECK (table_name IN ('event_outbox', 'iu_route_attempt')),
    lower_txid     xid8,       -- NULL: MINVALUE (the legacy partition)
    upper_txid     xid8        NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    closed_at      timestamptz  -- first seen with upper_txid <= xmin of a snapshot: every txid in it finished
);

COMMENT ON TABLE iu_history_partition IS
    'Partitions of event_outbox and iu_route_attempt (txid ranges) and when each closed; kept by fn_iu_partition_maintain.';

CREATE TABLE iu_retention_ledger (
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

COMMENT ON TABLE iu_retention_ledger IS
    'One row per history partition dropped by fn_iu_retention_run: which range, how many rows, by whom, when. Append-only.';

-- +goose StatementBegin
CREATE FUNCTION fn_iu_retention_ledger_immutable()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'fn_iu_retention_ledger_immutable: iu_retention_ledger is append-only: % rejected', TG_OP
        USING ERRCODE = 'IU001',
              HINT = 'The ledger is the evidence of what retention removed; it is never changed or removed.';
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER trg_iu_retention_ledger_immutable
    BEFORE UPDATE OR DELETE ON iu_retention_ledger
    FOR EACH ROW EXECUTE FUNCTION fn_iu_retention_ledger_immutable();
CREATE TRIGGER trg_iu_retention_ledger_no_truncate
    BEFORE TRUNCATE ON iu_retention_ledger
    FOR EACH STATEMENT EXECUTE FUNCTION fn_iu_retention_ledger_immutable();

-- ---------------------------------------------------------------------------------------
-- fn_iu_partition_guard(p_parent, p_partition): copy the parent's statement-level TRUNCATE
-- triggers onto one partition (PostgreSQL clones row triggers to partitions, never
-- statement triggers), so TRUNCATE of a single partition is refused like TRUNCATE of the
-- table. Idempotent. Internal.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_partition_guard(p_parent regclass, p_partition regclass)
RETURNS void
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT t.tgname, p.oid::regprocedure AS fn
               FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
              WHERE t.tgrelid = p_parent AND NOT t.tgisinternal
                AND t.tgtype & 34 = 34          -- BEFORE (2) TRUNCATE (32)
    LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_trigger x WHERE x.tgrelid = p_partition AND x.tgname = r.tgname) THEN
            EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION %s',
                           r.tgname, p_partition, r.fn);
        END IF;
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_partition_create(p_table, p_lower, p_upper): one partition of a history table for
-- txids [p_lower, p_upper), named <table>_p<lower, 20 digits> so names sort by range, with
-- its local keys (event_outbox: PRIMARY KEY (id); iu_route_attempt: PRIMARY KEY (id)), its
-- claim index named <partition>_domain_txid_idx, the TRUNCATE guard, and its row in
-- iu_history_partition. Internal (fn_iu_partition_maintain and the conversion call it).
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_partition_create(p_table text, p_lower xid8, p_upper xid8)
RETURNS text
LANGUAGE plpgsql
SET search_path = public, pg_temp
AS $$
DECLARE
    v_name text := p_table || '_p' || lpad(p_lower::text, 20, '0');
BEGIN
    -- Built as a table of its own, then ATTACHed: CREATE TABLE ... PARTITION OF would take
    -- an ACCESS EXCLUSIVE lock on the parent until the caller's transaction ends (an
    -- executor may call this inside a transaction it keeps open: every producer would
    -- wait), ATTACH takes SHARE UPDATE EXCLUSIVE, which no INSERT or SELECT conflicts with
    -- (only the default partition, scanned for rows of the new range, is locked).
    EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', v_name, p_table);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY (id)', v_name, v_name || '_pkey');
    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', p_table, v_name, p_lower, p_upper);
    IF p_table = 'event_outbox' THEN
        -- PostgreSQL names the child of the claim index itself; give it a name that says what it is.
        EXECUTE format('ALTER INDEX %s RENAME TO %I',
                       (SELECT i.inhrelid::regclass FROM pg_inherits i JOIN pg_index x ON x.indexrelid = i.inhrelid
                         WHERE i.inhparent = 'event_outbox_domain_txid_idx'::regclass AND x.indrelid = to_regclass(v_name)),
                       v_name || '_domain_txid_idx');
    END IF;
    PERFORM fn_iu_partition_guard(p_table::regclass, v_name::regclass);
    INSERT INTO iu_history_partition (partition_name, table_name, lower_txid, upper_txid)
    VALUES (v_name, p_table, p_lower, p_upper);
    RETURN v_name;
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_retention_config(p_caller, p_key, p_min, p_max) -> bigint: a whole-number dot_config
-- value (retention days, partition width). NULL when the key is missing or empty (for the
-- retention keys: keep forever). Anything but digits, or outside [p_min, p_max], is refused
-- with 22023 naming the key, so a typo never drops history. Internal.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_retention_config(p_caller text, p_key text, p_min bigint, p_max bigint)
RETURNS bigint
LANGUAGE plpgsql STABLE
SET search_path = public, pg_temp
AS $$
DECLARE
    v_raw text := (SELECT btrim(c.value) FROM dot_config c WHERE c.key = p_key);
BEGIN
    IF v_raw IS NULL OR v_raw = '' THEN
        RETURN NULL;
    END IF;
    IF v_raw !~ '^[0-9]{1,15}$' OR v_raw::bigint NOT BETWEEN p_min AND p_max THEN
        RAISE EXCEPTION '%: dot_config % = % is not a whole number from % to %', p_caller, p_key, quote_literal(v_raw), p_min, p_max
            USING ERRCODE = '22023',
                  HINT = format('UPDATE dot_config SET value = ''<number>'' WHERE key = %L; empty keeps history forever.', p_key);
    END IF;
    RETURN v_raw::bigint;
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_partition_record_closes() -> text[]: THE closed rule. A partition is closed once
-- its upper bound is at or below xmin of the current snapshot: every transaction id in its
-- range has finished, so no row can still arrive in it and every row in it is older than
-- that moment. Records closed_at = now() for each partition that closed since the last
-- call and returns their names. Maintenance and retention both call it (retention judges
-- ages by closed_at). Internal.
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_partition_record_closes()
RETURNS text[]
LANGUAGE sql
SET search_path = public, pg_temp
AS $$
    WITH c AS (
        UPDATE iu_history_partition p SET closed_at = now()
         WHERE p.closed_at IS NULL
           AND p.upper_txid <= pg_snapshot_xmin(pg_current_snapshot())
        RETURNING p.partition_name)
    SELECT coalesce(array_agg(c.partition_name ORDER BY c.partition_name), '{}') FROM c
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_partition_maintain() -> jsonb
-- Keeps both history tables partitioned ahead of the transaction ids in use, and records
-- when a partition closed. Called by the runner (tick, and the run loop on the stale-check
-- cadence); idempotent and safe to call concurrently (a transaction-scoped advisory lock:
-- a second caller returns {"busy": true} at once).
-- Algorithm: the next partition starts at the highest existing upper bound, or above the
-- highest txid already in a default partition (so no row ever has to move); partitions of
-- retention.partition_txids txids are added, to both tables with the same bounds, while
-- the room left above the next txid is under half a width (so between half and one and a
-- half widths of txids are always ready). Every partition whose upper
-- bound is <= xmin of the current snapshot (no transaction can still write into it) gets
-- closed_at = now() once. Adding a partition (built apart, then ATTACHed) takes SHARE
-- UPDATE EXCLUSIVE on the parent, which no INSERT or SELECT waits for, and ACCESS
-- EXCLUSIVE on the default partition (scanned for rows of the new range); it waits at most
-- 2 s for those (DDL or VACUUM on the table, a writer into the default partition): on a
-- timeout it returns {"lock_timeout": true} and the next call tries again.
-- Returns: busy, created[], closed[], partitions, newest_upper_txid, next_txid,
--          ahead_txids, width_txids, default_rows{event_outbox, iu_route_attempt}, lock_timeout,
--          default_raced (a producer's row reached the default partition above what this call
--          saw, while it waited: nothing created, the next call starts above it).
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_partition_maintain()
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_width   bigint;
    v_next    xid8;
    v_upper   xid8;
    v_lo      xid8;
    v_top     xid8;
    v_old_lt  text;
    v_created text[] := '{}';
    v_closed  text[];
    v_timeout boolean := false;
    v_raced   boolean := false;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_iu_partition_maintain');
    v_width := coalesce(fn_iu_retention_config('fn_iu_partition_maintain', 'retention.partition_txids', 1000, 1000000000000), 100000000);
    IF NOT pg_try_advisory_xact_lock(hashtext('iu_core.partition_maintain')) THEN
        RETURN jsonb_build_object('busy', true);
    END IF;
    v_next := pg_snapshot_xmax(pg_current_snapshot());

    v_old_lt := current_setting('lock_timeout');
    PERFORM set_config('lock_timeout', '2s', true);
    BEGIN
        SELECT p.upper_txid INTO v_upper FROM iu_history_partition p ORDER BY p.upper_txid DESC LIMIT 1;
        v_lo := v_upper;
        -- above the highest row already in a default partition (min/max of xid8 need PostgreSQL 14)
        SELECT o.txid INTO v_top FROM ONLY event_outbox_default o ORDER BY o.txid DESC LIMIT 1;
        IF v_top >= v_lo THEN v_lo := (v_top::text::numeric + 1)::text::xid8; END IF;
        SELECT a.event_txid INTO v_top FROM ONLY iu_route_attempt_default a ORDER BY a.event_txid DESC LIMIT 1;
        IF v_top >= v_lo THEN v_lo := (v_top::text::numeric + 1)::text::xid8; END IF;
        WHILE v_lo::text::numeric - v_next::text::numeric < v_width / 2 LOOP
            v_upper := (v_lo::text::numeric + v_width)::text::xid8;
            v_created := v_created || fn_iu_partition_create('event_outbox', v_lo, v_upper);
            v_created := v_created || fn_iu_partition_create('iu_route_attempt', v_lo, v_upper);
            v_lo := v_upper;
        END LOOP;
    EXCEPTION
        WHEN lock_not_available THEN
            v_timeout := true;
            v_created := '{}';
        WHEN check_violation THEN
            -- A producer's row reached the default partition above the highest one this
            -- call could see (its transaction committed while the new partition waited for
            -- the default partition's lock): nothing is created now; the next call starts
            -- above that row.
            v_raced := true;
            v_created := '{}';
    END;
    PERFORM set_config('lock_timeout', v_old_lt, true);
    SELECT p.upper_txid INTO v_upper FROM iu_history_partition p ORDER BY p.upper_txid DESC LIMIT 1;

    v_closed := fn_iu_partition_record_closes();

    RETURN jsonb_build_object(
        'busy', false,
        'lock_timeout', v_timeout,
        'default_raced', v_raced,
        'created', to_jsonb(v_created),
        'closed', to_jsonb(v_closed),
        'partitions', (SELECT count(*) FROM iu_history_partition),
        'newest_upper_txid', v_upper::text,
        'next_txid', v_next::text,
        'ahead_txids', v_upper::text::numeric - v_next::text::numeric,
        'width_txids', v_width,
        'default_rows', jsonb_build_object(
            'event_outbox', (SELECT count(*) FROM (SELECT 1 FROM ONLY event_outbox_default LIMIT 1000) d),
            'iu_route_attempt', (SELECT count(*) FROM (SELECT 1 FROM ONLY iu_route_attempt_default LIMIT 1000) d)));
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_retention_partition_unrouted(p_lower, p_upper) -> text[]: the registered route
-- workers that have NOT passed every row of their domain in the txid range [p_lower,
-- p_upper) (p_lower NULL: from the start). A worker has passed a row when its txid is
-- visible in the worker's done_snapshot (every such row is routed); a worker that never
-- ran, or whose cursor fails fn_iu_route_worker_cursor_check, has passed nothing. Idle
-- runs do not move done_snapshot, so passing is judged by the
-- rows, not by the snapshot moving: no row of the domain in the range is still unrouted.
-- One probe per worker on (event_domain, txid, id), pruned to the range's partition.
-- Internal (fn_iu_retention_run).
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_retention_partition_unrouted(p_lower xid8, p_upper xid8)
RETURNS text[]
LANGUAGE plpgsql STABLE
SET search_path = public, pg_temp
AS $$
-- One plain statement per worker (its domain and snapshot as parameters), not one query
-- correlated over the cursors: the correlated form trips PostgreSQL 13's run-time partition
-- pruning ("could not match partition child tables to plan elements").
DECLARE
    c         record;
    v_done    pg_snapshot;
    v_workers text[] := '{}';
BEGIN
    -- A cursor that fails the cursor sanity rule (recorded in another cluster, or holding
    -- txids ahead of this one: a dump/restore) has passed nothing here: its worker refuses
    -- to run until it is re-anchored, and its snapshot says nothing about this cluster's rows.
    FOR c IN SELECT cur.worker_name, cur.event_domain,
                    CASE WHEN NOT EXISTS (SELECT 1 FROM fn_iu_route_worker_cursor_check(cur)) THEN cur.done_snapshot END AS done_snapshot
               FROM iu_route_worker_cursor cur ORDER BY cur.worker_name LOOP
        v_done := coalesce(c.done_snapshot, '1:1:'::pg_snapshot);
        IF EXISTS (SELECT 1 FROM event_outbox o
                    WHERE o.event_domain = c.event_domain
                      AND o.txid >= greatest(coalesce(p_lower, '0'::xid8), pg_snapshot_xmin(v_done))
                      AND o.txid < p_upper
                      AND NOT pg_visible_in_snapshot(o.txid, v_done)) THEN
            v_workers := v_workers || c.worker_name;
        END IF;
    END LOOP;
    RETURN v_workers;
END;
$$;
-- +goose StatementEnd

-- ---------------------------------------------------------------------------------------
-- fn_iu_retention_run(p_dry_run boolean DEFAULT true) -> jsonb
-- Drops whole history partitions that retention allows, oldest first, and records each
-- drop in iu_retention_ledger. A partition is dropped only when ALL hold:
--   event_outbox partition
--     (a) retention.event_outbox_days is set and the partition closed at least that many
--         days ago (closed: every txid in its range finished, so every row in it is older);
--     (b) it is closed (never the partition holding current inserts: its upper bound is at
--         or below xmin of the current snapshot);
--     (c) every registered route worker has passed all of it
--         (fn_iu_retention_partition_unrouted is empty).
--   iu_route_attempt partition (same bounds)
--     (a) retention.route_attempt_days is set and it closed at least that many days ago;
--     (b) closed;
--     (c) the event_outbox partition of the same range is gone (dropped earlier or in this
--         run): the attempts are the re-scan guard of those events, so they outlive them;
--     (d) no open dead letter holds an event of that range (its replay writes there).
-- Dead letters keep their whole event (event_snapshot), so no drop affects a replay.
-- p_dry_run true (the default): nothing is dropped; the answer says what would be.
-- Returns: dry_run, dropped[{table, partition, lower_txid, upper_txid, rows, closed_at}],
--          kept[{table, partition, reason, [workers]}], retention{event_outbox_days,
--          route_attempt_days}, lock_timeout.
-- Takes the maintenance lock (waits at most 2 s for a running maintenance, else answers
-- busy and lock_timeout, dropping nothing); each DROP waits at most 2 s for its lock
-- (lock_timeout: the run stops there and says so).
-- ---------------------------------------------------------------------------------------
-- +goose StatementBegin
CREATE FUNCTION fn_iu_retention_run(p_dry_run boolean DEFAULT true)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_outbox_days  bigint;
    v_attempt_days bigint;
    v_days         bigint;
    v_xmin         xid8;
    v_actor        text;
    p              iu_history_partition%ROWTYPE;
    v_workers      text[];
    v_reason       text;
    v_rows         bigint;
    v_dropped      jsonb := '[]';
    v_kept         jsonb := '[]';
    v_gone         text[] := '{}';    -- event_outbox ranges (lower::text) gone in this run
    v_timeout      boolean := false;
    v_old_lt       text;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_iu_retention_run');
    IF p_dry_run IS NULL THEN
        RAISE EXCEPTION 'fn_iu_retention_run: p_dry_run required' USING ERRCODE = '22023',
            HINT = 'SELECT fn_iu_retention_run(true) to see what would be dropped, fn_iu_retention_run(false) to drop it.';
    END IF;
    v_outbox_days  := fn_iu_retention_config('fn_iu_retention_run', 'retention.event_outbox_days', 0, 36500);
    v_attempt_days := fn_iu_retention_config('fn_iu_retention_run', 'retention.route_attempt_days', 0, 36500);
    v_actor := fn_queue_actor(NULL, 'fn_iu_retention_run');
    v_old_lt := current_setting('lock_timeout');
    PERFORM set_config('lock_timeout', '2s', true);
    -- The maintenance lock, waited for at most 2 s like every lock here: a session that
    -- holds it in an open transaction (maintenance is granted to executors) must not hang
    -- the run for as long as that transaction lives.
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('iu_core.partition_maintain'));
    EXCEPTION WHEN lock_not_available THEN
        PERFORM set_config('lock_timeout', v_old_lt, true);
        RETURN jsonb_build_object('dry_run', p_dry_run, 'dropped', v_dropped, 'kept', v_kept,
                                  'lock_timeout', true, 'busy', true,
                                  'retention', jsonb_build_object('event_outbox_days', v_outbox_days,
                                                                  'route_attempt_days', v_attempt_days));
    END;
    -- closed_at must be current before ages are judged
    PERFORM fn_iu_partition_record_closes();
    v_xmin := pg_snapshot_xmin(pg_current_snapshot());

    -- event_outbox first (an attempt partition waits for its events' partition), oldest first.
    FOR p IN SELECT * FROM iu_history_partition h
              ORDER BY h.table_name, h.upper_txid
    LOOP
        v_workers := NULL;
        v_days := CASE p.table_name WHEN 'event_outbox' THEN v_outbox_days ELSE v_attempt_days END;
        v_reason := CASE
            WHEN v_days IS NULL THEN 'retention_not_configured'
            WHEN p.closed_at IS NULL OR p.upper_txid > v_xmin THEN 'not_closed'
            WHEN p.closed_at > now() - make_interval(days => v_days::integer) THEN 'younger_than_retention'
        END;
        IF v_reason IS NULL AND p.table_name = 'event_outbox' THEN
            v_workers := fn_iu_retention_partition_unrouted(p.lower_txid, p.upper_txid);
            IF cardinality(v_workers) > 0 THEN
                v_reason := 'cursor_not_passed';
            END IF;
        ELSIF v_reason IS NULL THEN
            IF EXISTS (SELECT 1 FROM iu_history_partition e
                        WHERE e.table_name = 'event_outbox'
                          AND e.lower_txid IS NOT DISTINCT FROM p.lower_txid AND e.upper_txid = p.upper_txid)
               AND NOT coalesce(p.lower_txid::text, 'min') = ANY (v_gone) THEN
                v_reason := 'events_still_kept';
            ELSIF EXISTS (SELECT 1 FROM iu_route_dead_letter d
                           WHERE d.resolved_at IS NULL
                             AND (d.event_snapshot->>'txid')::xid8 < p.upper_txid
                             AND (p.lower_txid IS NULL OR (d.event_snapshot->>'txid')::xid8 >= p.lower_txid)) THEN
                v_reason := 'open_dead_letter';
            END IF;
        END IF;
        IF v_reason IS NOT NULL THEN
            v_kept := v_kept || jsonb_strip_nulls(jsonb_build_object('table', p.table_name, 'partition', p.partition_name,
                                                                   'reason', v_reason, 'workers', to_jsonb(v_workers)));
            CONTINUE;
        END IF;

        EXECUTE format('SELECT count(*) FROM ONLY %I', p.partition_name) INTO v_rows;
        IF NOT p_dry_run THEN
            -- A DROP holds the parent ACCESS EXCLUSIVE until this transaction ends, which
            -- holds every producer. A caller that leaves the transaction open (psql
            -- without autocommit, a script) must not hold them for long: idle in this
            -- transaction for more than 2 s, the session is ended and the drops roll back
            -- (nothing is lost; the next run drops them again).
            PERFORM set_config('idle_in_transaction_session_timeout', '2s', true);
            BEGIN
                EXECUTE format('DROP TABLE %I', p.partition_name);
            EXCEPTION WHEN lock_not_available THEN
                v_timeout := true;
                EXIT;
            END;
            DELETE FROM iu_history_partition h WHERE h.partition_name = p.partition_name;
            INSERT INTO iu_retention_ledger (table_name, partition_name, lower_txid, upper_txid, row_count,
                                             closed_at, retention_days, dropped_by)
            VALUES (p.table_name, p.partition_name, p.lower_txid, p.upper_txid, v_rows, p.closed_at, v_days, v_actor);
        END IF;
        IF p.table_name = 'event_outbox' THEN
            v_gone := v_gone || coalesce(p.lower_txid::text, 'min');
        END IF;
        v_dropped := v_dropped || jsonb_build_object('table', p.table_name, 'partition', p.partition_name,
                                                     'lower_txid', p.lower_txid::text, 'upper_txid', p.upper_txid::text,
                                                     'rows', v_rows, 'closed_at', p.closed_at);
    END LOOP;

    PERFORM set_config('lock_timeout', v_old_lt, true);
    RETURN jsonb_build_object('dry_run', p_dry_run, 'dropped', v_dropped, 'kept', v_kept,
                              'lock_timeout', v_timeout,
                              'retention', jsonb_build_object('event_outbox_days', v_outbox_days,
                                                              'route_attempt_days', v_attempt_days));
END;
$$;
-- +goose StatementEnd

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
    v_b        xid8 := (pg_current_xact_id()::text::numeric + 1)::text::xid8;
    v_t        text;
    v_trig     text[];
    v_comment  text;
    r          record;
    v_next_id  bigint;
BEGIN
    LOCK TABLE event_outbox, iu_route_attempt IN ACCESS EXCLUSIVE MODE;
    FOREACH v_t IN ARRAY ARRAY['event_outbox', 'iu_route_attempt'] LOOP
        SELECT coalesce(array_agg(pg_get_triggerdef(t.oid) ORDER BY t.tgname), '{}') INTO v_trig
          FROM pg_trigger t WHERE t.tgrelid = v_t::regclass AND NOT t.tgisinternal;
        FOR r IN SELECT t.tgname FROM pg_trigger t WHERE t.tgrelid = v_t::regclass AND NOT t.tgisinternal LOOP
            EXECUTE format('DROP TRIGGER %I ON %I', r.tgname, v_t);
        END LOOP;
        v_comment := obj_description(v_t::regclass, 'pg_class');

        EXECUTE format('ALTER TABLE %I RENAME TO %I', v_t, v_t || '_legacy');
        EXECUTE format('ALTER TABLE %I RENAME CONSTRAINT %I TO %I', v_t || '_legacy', v_t || '_pkey', v_t || '_legacy_pkey');
        IF v_t = 'event_outbox' THEN
            ALTER INDEX event_outbox_domain_txid_idx RENAME TO event_outbox_legacy_domain_txid_idx;
            CREATE TABLE event_outbox (LIKE event_outbox_legacy INCLUDING DEFAULTS INCLUDING COMMENTS)
                PARTITION BY RANGE (txid);
        ELSE
            ALTER TABLE iu_route_attempt_legacy RENAME CONSTRAINT iu_route_attempt_key_attempt_uq TO iu_route_attempt_legacy_key_attempt_uq;
            CREATE TABLE iu_route_attempt (LIKE iu_route_attempt_legacy INCLUDING DEFAULTS INCLUDING IDENTITY INCLUDING COMMENTS)
                PARTITION BY RANGE (event_txid);
            SELECT coalesce(max(a.id), 0) + 1 INTO v_next_id FROM iu_route_attempt_legacy a;
            v_next_id := greatest(v_next_id, (SELECT s.last_value + 1 FROM pg_sequences s
                                               WHERE s.schemaname = 'public' AND s.sequencename = 'iu_route_attempt_id_seq'
                                                 AND s.last_value IS NOT NULL));
            -- The old sequence goes (PostgreSQL 17+ refuses a partition with its own identity);
            -- the parent's continues after it.
            ALTER TABLE iu_route_attempt_legacy ALTER COLUMN id DROP IDENTITY;
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
            CREATE INDEX event_outbox_domain_txid_idx ON event_outbox (event_domain, txid, id);
        ELSE
            -- The re-scan guard, exact per partition (all attempts of one event share event_txid).
            ALTER TABLE iu_route_attempt ADD CONSTRAINT iu_route_attempt_key_attempt_uq
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
        FOREACH v_comment IN ARRAY v_trig LOOP
            EXECUTE v_comment;     -- the definition names the table by its old (now the parent's) name
        END LOOP;

        EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)', v_t, v_t || '_legacy', v_b);
        EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', v_t || '_default', v_t);
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY (id)', v_t || '_default', v_t || '_default_pkey');
        PERFORM fn_iu_partition_guard(v_t::regclass, (v_t || '_legacy')::regclass);
        PERFORM fn_iu_partition_guard(v_t::regclass, (v_t || '_default')::regclass);
        INSERT INTO iu_history_partition (partition_name, table_name, lower_txid, upper_txid)
        VALUES (v_t || '_legacy', v_t, NULL, v_b);
    END LOOP;
    EXECUTE format('ALTER INDEX %s RENAME TO event_outbox_default_domain_txid_idx',
                   (SELECT i.inhrelid::regclass FROM pg_inherits i JOIN pg_index x ON x.indexrelid = i.inhrelid
                     WHERE i.inhparent = 'event_outbox_domain_txid_idx'::regclass
                       AND x.indrelid = 'event_outbox_default'::regclass));
    COMMENT ON COLUMN iu_route_attempt.event_txid IS
        'The routed event''s txid: the partition key, so every attempt of one event lands in one partition.';
END;
$$;
-- +goose StatementEnd

SELECT fn_iu_partition_maintain();

REVOKE ALL ON FUNCTION fn_iu_retention_ledger_immutable() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_partition_guard(regclass, regclass) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_partition_create(text, xid8, xid8) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_partition_record_closes() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_retention_config(text, text, bigint, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_partition_maintain() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_retention_partition_unrouted(xid8, xid8) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_retention_run(boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION fn_iu_partition_maintain() TO workflow_admin, dot_executor;
GRANT EXECUTE ON FUNCTION fn_iu_retention_run(boolean) TO workflow_admin;
GRANT SELECT ON iu_history_partition, iu_retention_ledger TO workflow_admin;

-- +goose Down
REVOKE SELECT ON iu_history_partition, iu_retention_ledger FROM workflow_admin;
REVOKE EXECUTE ON FUNCTION fn_iu_partition_maintain() FROM workflow_admin, dot_executor;
REVOKE EXECUTE ON FUNCTION fn_iu_retention_run(boolean) FROM workflow_admin;

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
    LOCK TABLE event_outbox, iu_route_attempt IN ACCESS EXCLUSIVE MODE;
    FOREACH v_t IN ARRAY ARRAY['event_outbox', 'iu_route_attempt'] LOOP
        IF to_regclass(v_t || '_legacy') IS NULL THEN
            RAISE EXCEPTION '017 down: partition %_legacy was dropped by retention; the unpartitioned shape cannot be restored from it', v_t
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
            INSERT INTO event_outbox_legacy SELECT * FROM event_outbox;
        ELSE
            INSERT INTO iu_route_attempt_legacy SELECT * FROM iu_route_attempt;
            SELECT greatest(coalesce(max(a.id), 0) + 1,
                            coalesce((SELECT s.last_value + 1 FROM pg_sequences s
                                       WHERE s.schemaname = 'public' AND s.sequencename = 'iu_route_attempt_id_seq'), 1))
              INTO v_next_id FROM iu_route_attempt_legacy a;
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
            ALTER TABLE iu_route_attempt RENAME CONSTRAINT iu_route_attempt_legacy_key_attempt_uq TO iu_route_attempt_key_attempt_uq;
            -- (PostgreSQL 17+ removes the parent's identity from a detached partition; older
            -- versions never gave it one.)
            IF (SELECT a.attidentity FROM pg_attribute a
                 WHERE a.attrelid = 'iu_route_attempt'::regclass AND a.attname = 'id') = '' THEN
                ALTER TABLE iu_route_attempt ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY;
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
END;
$$;
-- +goose StatementEnd

DROP FUNCTION fn_iu_retention_run(boolean);
DROP FUNCTION fn_iu_retention_partition_unrouted(xid8, xid8);
DROP FUNCTION fn_iu_partition_maintain();
DROP FUNCTION fn_iu_retention_config(text, text, bigint, bigint);
DROP FUNCTION fn_iu_partition_create(text, xid8, xid8);
DROP FUNCTION fn_iu_partition_record_closes();
DROP FUNCTION fn_iu_partition_guard(regclass, regclass);

DROP TABLE iu_retention_ledger;
DROP FUNCTION fn_iu_retention_ledger_immutable();
DROP TABLE iu_history_partition;
DELETE FROM dot_config WHERE key IN ('retention.event_outbox_days', 'retention.route_attempt_days', 'retention.partition_txids');
