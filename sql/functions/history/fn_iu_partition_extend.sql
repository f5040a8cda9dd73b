CREATE OR REPLACE FUNCTION iu_core.fn_iu_partition_extend(p_width bigint)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_partition_extend(p_width) -> jsonb: the partition changes of one maintenance call;
    -- fn_iu_partition_maintain calls it holding the maintenance lock, inside a block that
    -- turns a failure into an answer (a failure raised here rolls back everything it did and
    -- releases every lock it took). Returns {created[], default_attached[], recut[], behind,
    -- default_stuck}. Two ways, chosen before any table lock:
    --
    -- Ahead (the steady state: the defaults are empty and the next partition's lower bound
    -- is at least a margin, min(width / 2, 10,000) txids, above the next txid): the partitions
    -- fn_iu_partition_plan asks for are built apart (fn_iu_partition_build: all that takes
    -- time) and ATTACHed under SHARE UPDATE EXCLUSIVE on the parents and ACCESS EXCLUSIVE on
    -- the default partitions, which no producer waits for (nothing is written there) and a
    -- reader waits for at most 20 ms (fn_iu_history_lock_tables). The margin is what makes
    -- this safe while producers write: no txid reaches the new range while its ATTACH
    -- commits, so no insert in flight was routed to a default partition the new range takes
    -- from (PostgreSQL fails such an insert), and no reader planned before the ATTACH misses
    -- a row of the new partition; the call checks it at the end and otherwise rolls back
    -- (check_violation: the answer says default_raced, the next call goes the other way).
    --
    -- Behind (rows in a default partition, txids within the margin of the last partition or
    -- past it, or empty partitions ahead of another width than the setting): ACCESS
    -- EXCLUSIVE on both parents and their default partitions (and the partitions to re-cut),
    -- had at once or not at all, so every producer and reader that comes meanwhile waits at
    -- the parent and plans again with the new partitions: nothing races. Then, in order:
    --   1. the defaults' rows: each default partition itself becomes the range partition of
    --      the gap between partitions that holds its rows (fn_iu_partition_default_attach:
    --      no row moves; a new empty default takes its place), when they all lie in one gap
    --      (otherwise default_stuck: they stay, counted in default_rows, see the runbook);
    --   2. a width change: the partitions wholly ahead of the next txid (none of their txids
    --      assigned, so empty) from the first one of another width up are dropped (recut);
    --   3. the partitions fn_iu_partition_plan asks for above the highest upper bound, the
    --      first covering every txid already past it. One call catches up however far behind
    --      maintenance was; what it costs under the lock is catalog work plus one scan of the
    --      rows the default partitions hold (their ATTACH check).
    -- Internal.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_margin   numeric := least(p_width / 2, 10000);
    v_next     numeric := pg_snapshot_xmax(pg_current_snapshot())::text::numeric;
    v_top      numeric;
    v_cut      numeric;
    v_dmin     numeric;
    v_dmax     numeric;
    v_glo      numeric;
    v_ghi      numeric;
    v_swap     boolean := false;
    v_stuck    boolean := false;
    v_behind   boolean;
    v_plan     numeric[];
    v_planup   numeric[];
    v_built    text[] := '{}';     -- event_outbox tables built (the attempt twins share the suffix)
    v_created  text[] := '{}';
    v_attached text[] := '{}';
    v_recut    text[] := '{}';
    v_rels     regclass[];
    v_modes    text[];
    v_name     text;
    v_t        text;
    i          integer;
BEGIN
    SELECT coalesce(max(p.upper_txid::text::numeric), v_next) INTO v_top
      FROM public.iu_history_partition p WHERE p.table_name = 'event_outbox';

    -- Rows in the default partitions (none in the steady state: one cheap probe each).
    IF EXISTS (SELECT 1 FROM ONLY public.event_outbox_default) OR EXISTS (SELECT 1 FROM ONLY public.iu_route_attempt_default) THEN
        SELECT min(d.t), max(d.t) INTO v_dmin, v_dmax
          FROM (SELECT o.txid::text::numeric AS t FROM ONLY public.event_outbox_default o
                UNION ALL
                SELECT a.event_txid::text::numeric FROM ONLY public.iu_route_attempt_default a) d;
        -- the gap that holds the lowest of them: from the highest upper bound below it (none
        -- below, every partition there dropped by retention: the lowest row itself) to the
        -- lowest lower bound above it (none above: the txids in use)
        SELECT coalesce(max(p.upper_txid::text::numeric), v_dmin) INTO v_glo FROM public.iu_history_partition p
         WHERE p.table_name = 'event_outbox' AND p.upper_txid::text::numeric <= v_dmin;
        SELECT min(p.lower_txid::text::numeric) INTO v_ghi FROM public.iu_history_partition p
         WHERE p.table_name = 'event_outbox' AND p.lower_txid::text::numeric > v_dmin;
        v_swap := v_ghi IS NULL OR v_dmax < v_ghi;
        v_stuck := NOT v_swap;
    END IF;
    -- Partitions wholly ahead of another width than the setting (re-cut from the first up),
    -- when no default rows are being dealt with in this call.
    IF NOT v_swap THEN
        SELECT min(p.lower_txid::text::numeric) INTO v_cut FROM public.iu_history_partition p
         WHERE p.table_name = 'event_outbox' AND p.lower_txid::text::numeric >= v_next + v_margin
           AND p.upper_txid::text::numeric - p.lower_txid::text::numeric <> p_width;
    END IF;
    v_behind := v_swap OR v_cut IS NOT NULL OR v_top - v_next < v_margin;

    -- The plan as far as it is known now; built before any lock is asked for.
    SELECT coalesce(array_agg(x.lower_txid ORDER BY x.lower_txid), '{}'), coalesce(array_agg(x.upper_txid ORDER BY x.lower_txid), '{}')
      INTO v_plan, v_planup
      FROM iu_core.fn_iu_partition_plan(
               CASE WHEN v_swap AND v_ghi IS NULL THEN greatest(v_top, v_next) ELSE coalesce(v_cut, v_top) END,
               v_next, p_width) x;
    IF NOT v_behind AND cardinality(v_plan) = 0 THEN
        RETURN jsonb_build_object('created', '[]'::jsonb, 'default_attached', '[]'::jsonb, 'recut', '[]'::jsonb,
                                  'behind', false, 'default_stuck', v_stuck);
    END IF;
    FOR i IN 1 .. cardinality(v_plan) LOOP
        v_built := v_built || iu_core.fn_iu_partition_build('event_outbox', v_plan[i]::text::xid8);
        PERFORM iu_core.fn_iu_partition_build('iu_route_attempt', v_plan[i]::text::xid8);
    END LOOP;

    IF NOT v_behind THEN
        v_rels  := ARRAY[to_regclass('public.iu_route_attempt'), to_regclass('public.iu_route_attempt_default'),
                         to_regclass('public.event_outbox'), to_regclass('public.event_outbox_default')];
        v_modes := ARRAY['SHARE UPDATE EXCLUSIVE', 'ACCESS EXCLUSIVE', 'SHARE UPDATE EXCLUSIVE', 'ACCESS EXCLUSIVE'];
        IF NOT iu_core.fn_iu_history_lock_tables(v_rels, v_modes) THEN
            RAISE EXCEPTION 'fn_iu_partition_maintain: the default partitions'' locks were not free' USING ERRCODE = '55P03';
        END IF;
        PERFORM set_config('lock_timeout', '50ms', true);
        FOR i IN 1 .. cardinality(v_plan) LOOP
            FOREACH v_t IN ARRAY ARRAY['event_outbox', 'iu_route_attempt'] LOOP
                v_created := v_created || iu_core.fn_iu_partition_attach(v_t, v_t || substr(v_built[i], length('event_outbox') + 1),
                                                                         v_plan[i]::text::xid8, v_planup[i]::text::xid8);
            END LOOP;
        END LOOP;
        -- The margin held: no txid of the new ranges was assigned before this commits.
        IF pg_snapshot_xmax(pg_current_snapshot())::text::numeric >= v_plan[1] THEN
            RAISE EXCEPTION 'fn_iu_partition_maintain: txids reached % while the partition starting there was attached', v_plan[1]
                USING ERRCODE = '23514';
        END IF;
        RETURN jsonb_build_object('created', to_jsonb(v_created), 'default_attached', '[]'::jsonb, 'recut', '[]'::jsonb,
                                  'behind', false, 'default_stuck', v_stuck);
    END IF;

    -- Behind: both parents, their defaults and what is re-cut, ACCESS EXCLUSIVE, in the lock
    -- order (iu_route_attempt's first, each parent before its partitions).
    v_rels := ARRAY[to_regclass('public.iu_route_attempt'), to_regclass('public.iu_route_attempt_default')];
    IF v_cut IS NOT NULL THEN
        v_rels := v_rels || ARRAY(SELECT to_regclass('public.' || quote_ident(p.partition_name)) FROM public.iu_history_partition p
                                   WHERE p.table_name = 'iu_route_attempt' AND p.lower_txid::text::numeric >= v_cut ORDER BY p.lower_txid);
    END IF;
    v_rels := v_rels || ARRAY[to_regclass('public.event_outbox'), to_regclass('public.event_outbox_default')];
    IF v_cut IS NOT NULL THEN
        v_rels := v_rels || ARRAY(SELECT to_regclass('public.' || quote_ident(p.partition_name)) FROM public.iu_history_partition p
                                   WHERE p.table_name = 'event_outbox' AND p.lower_txid::text::numeric >= v_cut ORDER BY p.lower_txid);
    END IF;
    v_modes := array_fill('ACCESS EXCLUSIVE'::text, ARRAY[cardinality(v_rels)]);
    IF NOT iu_core.fn_iu_history_lock_tables(v_rels, v_modes) THEN
        RAISE EXCEPTION 'fn_iu_partition_maintain: the history tables'' locks were not free' USING ERRCODE = '55P03';
    END IF;
    PERFORM set_config('lock_timeout', '50ms', true);
    -- Under these locks no transaction that wrote either table is open: every row of either
    -- has a txid below the next one.
    v_next := pg_snapshot_xmax(pg_current_snapshot())::text::numeric;

    IF v_swap THEN
        v_ghi := coalesce(v_ghi, v_next);
        FOREACH v_t IN ARRAY ARRAY['event_outbox', 'iu_route_attempt'] LOOP
            v_attached := v_attached || iu_core.fn_iu_partition_default_attach(v_t, v_glo::text::xid8, v_ghi::text::xid8);
        END LOOP;
    END IF;
    IF v_cut IS NOT NULL THEN
        FOR v_name IN SELECT p.partition_name FROM public.iu_history_partition p
                       WHERE p.lower_txid::text::numeric >= v_cut ORDER BY p.table_name, p.lower_txid LOOP
            EXECUTE format('DROP TABLE public.%I', v_name);
            v_recut := v_recut || v_name;
        END LOOP;
        DELETE FROM public.iu_history_partition p WHERE p.lower_txid::text::numeric >= v_cut;
    END IF;

    -- The plan again, with what is known now; tables built for it are renamed to their
    -- final lower bounds, one more is built if it needs more, the unused ones are dropped.
    SELECT coalesce(max(p.upper_txid::text::numeric), v_next) INTO v_top
      FROM public.iu_history_partition p WHERE p.table_name = 'event_outbox';
    SELECT coalesce(array_agg(x.lower_txid ORDER BY x.lower_txid), '{}'), coalesce(array_agg(x.upper_txid ORDER BY x.lower_txid), '{}')
      INTO v_plan, v_planup
      FROM iu_core.fn_iu_partition_plan(v_top, v_next, p_width) x;
    FOR i IN cardinality(v_plan) + 1 .. cardinality(v_built) LOOP
        FOREACH v_t IN ARRAY ARRAY['event_outbox', 'iu_route_attempt'] LOOP
            EXECUTE format('DROP TABLE public.%I', v_t || substr(v_built[i], length('event_outbox') + 1));
        END LOOP;
    END LOOP;
    FOR i IN cardinality(v_built) + 1 .. cardinality(v_plan) LOOP
        v_built := v_built || iu_core.fn_iu_partition_build('event_outbox', v_plan[i]::text::xid8);
        PERFORM iu_core.fn_iu_partition_build('iu_route_attempt', v_plan[i]::text::xid8);
    END LOOP;
    -- Highest first: a final bound is never below the planned one, so a table renamed up
    -- never takes the name of one not renamed yet.
    FOR i IN REVERSE cardinality(v_plan) .. 1 LOOP
        FOREACH v_t IN ARRAY ARRAY['iu_route_attempt', 'event_outbox'] LOOP
            v_created := iu_core.fn_iu_partition_attach(v_t, v_t || substr(v_built[i], length('event_outbox') + 1),
                                                         v_plan[i]::text::xid8, v_planup[i]::text::xid8) || v_created;
        END LOOP;
    END LOOP;
    RETURN jsonb_build_object('created', to_jsonb(v_created), 'default_attached', to_jsonb(v_attached), 'recut', to_jsonb(v_recut),
                              'behind', true, 'default_stuck', v_stuck);
END;
$$;
