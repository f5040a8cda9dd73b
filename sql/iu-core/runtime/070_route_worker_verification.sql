-- 070_route_worker_verification.sql — read-only checks W1–W10 of the route worker.
--
--   psql "$DATABASE_URL" -X -v ON_ERROR_STOP=1 -f sql/iu-core/runtime/070_route_worker_verification.sql
--
-- Prints one row per check: check | pass | detail. Exit status 0 when all ten pass; when
-- one fails the rows are still printed, then the script raises and psql exits 3.
-- Writes nothing: everything runs inside BEGIN READ ONLY ... ROLLBACK, and it also runs
-- with PGOPTIONS='-c default_transaction_read_only=on'. The only state it sets is
-- transaction-local settings (iu_verify.*) and one session prepared statement.
-- Definitions of W1–W9: runbooks/route-worker-verify.md; W10 below.
--
--   W1 substrate present        the eight tables, event_outbox.txid, the claim index
--   W2 functions present        the six worker functions, the two gate readers, three views
--   W3 gates fail-closed        each gate reader, evaluated on a simulated dot_config (key
--                               missing, 'false', 'TRUE', ' true', '', 'true'), opens only on
--                               exactly 'true'; it agrees with the live config; the worker
--                               consults both gates
--   W4 cursor seeded            iu_outbound_default has a cursor on domain 'iu' that belongs
--                               to this cluster, and a heartbeat row
--   W5 uniqueness constraints   UNIQUE (idempotency_key, attempt_no, event_txid) on attempts
--                               (partitioned by event_txid: every attempt of one event shares
--                               it, so per partition this is (idempotency_key, attempt_no)), UNIQUE
--                               idempotency_key on dead letters, route match and route_key
--                               unique, one cursor per worker
--   W6 dead letters undeletable enabled BEFORE DELETE (row) and BEFORE TRUNCATE triggers that
--                               raise on iu_route_dead_letter (and on iu_route_attempt)
--   W7 delivery seam fail-closed fn_iu_route_deliver, called here, raises 0A000
--   W8 no duplicate attempts    no (idempotency_key, attempt_no) pair occurs twice
--   W9 privileges               PUBLIC executes no package function; dot_executor runs the
--                               worker; workflow_admin registers, resets, replays, reads health
--                               and the views; neither role writes the worker tables directly
--   W10 search path trusted     no untrusted role (anyone but superusers, the package owner and
--                               the roles that can act as it: on 16+ a member with both SET and
--                               INHERIT) may CREATE in schema public, no function or operator in
--                               public belongs to one (fn_iu_search_path_threats), and no
--                               function or operator in public or iu_core is one the package did
--                               not create, WHOEVER OWNS IT NOW: a plant handed to a trusted owner
--                               after the fact is still a plant (fn_iu_search_path_foreign_objects,
--                               against the generated list iu_core.fn_iu_package_functions());
--                               the fix is in each finding

\set ON_ERROR_STOP on

BEGIN TRANSACTION READ ONLY;
-- Everything of the package is named with its schema (public.x, iu_core.x) and the path holds
-- only pg_catalog: no search_path a database owner, role or session set can redirect a check.
SET LOCAL search_path = pg_catalog, pg_temp;

-- W3, W7 and W10 need PL/pgSQL (dynamic SQL, catching an error). A DO block returns no rows, so
-- it leaves its findings in transaction-local settings that the checks query reads.
DO $verify$
DECLARE
    v_fn      text;
    v_body    text;
    v_lang    text;
    v_case    record;
    v_got     boolean;
    v_bad     text[] := '{}';
    v_state   text;
    v_msg     text;
    v_seam    regprocedure;
    v_args    text;
BEGIN
    -- W3: run each gate reader's own body against a simulated dot_config. The body is
    -- prefixed with a CTE named dot_config, which an unqualified reference resolves to
    -- before the table, so nothing is written and the live config is not read.
    FOREACH v_fn IN ARRAY ARRAY['fn_iu_core_routes_enabled', 'fn_iu_route_worker_enabled'] LOOP
        SELECT p.prosrc, l.lanname INTO v_body, v_lang
          FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
         WHERE p.oid = to_regprocedure('public.' || v_fn || '()');
        IF v_body IS NULL THEN
            v_bad := v_bad || (v_fn || ': missing');
            CONTINUE;
        END IF;
        -- The header comment a body starts with goes first (line comments only).
        v_body := regexp_replace(v_body, '^(\s*--[^\n]*\n)*', '');
        -- A PL/pgSQL reader is BEGIN RETURN (<one SELECT>); END: simulate that SELECT.
        IF v_lang = 'plpgsql' THEN
            v_body := substring(v_body FROM '(?is)^\s*BEGIN\s+RETURN\s*\((.*)\)\s*;\s*END\s*;?\s*$');
            v_lang := 'sql';
        END IF;
        IF v_lang <> 'sql' OR v_body IS NULL OR v_body ~* '\mpg_temp\s*\.\s*dot_config\M' OR v_body !~* '^\s*select\M' THEN
            v_bad := v_bad || (v_fn || ': body cannot be simulated (not one SELECT over dot_config or public.dot_config, as LANGUAGE sql or as a PL/pgSQL BEGIN RETURN (SELECT ...); END); inspect it by hand');
            CONTINUE;
        END IF;
        -- public.dot_config (a reader pinned to search_path = pg_catalog names it so) reads
        -- the simulated CTE once the qualifier is dropped.
        v_body := regexp_replace(regexp_replace(v_body, ';\s*$', ''), '\mpublic\s*\.\s*dot_config\M', 'dot_config', 'gi');
        FOR v_case IN
            SELECT * FROM (VALUES ('missing', NULL::text, false), ('false', 'false', false),
                                  ('TRUE', 'TRUE', false), (' true', ' true', false),
                                  ('empty', '', false), ('yes', 'yes', false), ('1', '1', false),
                                  ('true', 'true', true)) c(label, value, want)
        LOOP
            BEGIN
                EXECUTE format('WITH dot_config(key, value) AS (SELECT k, v FROM (VALUES (%L, %L), (%L, %L)) s(k, v) WHERE v IS NOT NULL) %s',
                               CASE v_fn WHEN 'fn_iu_core_routes_enabled' THEN 'iu_core.routes_enabled' ELSE 'iu_core.route_worker_enabled' END,
                               v_case.value, 'unrelated.key', 'true', v_body)
                   INTO v_got;
            EXCEPTION WHEN OTHERS THEN
                -- e.g. a reader replaced by one that raises, or no EXECUTE on fn_iu_gate_open
                v_bad := v_bad || format('%s: simulation raised %s', v_fn, SQLERRM);
                EXIT;
            END;
            IF v_got IS DISTINCT FROM v_case.want THEN
                v_bad := v_bad || format('%s: value %s reads %s, want %s', v_fn, v_case.label,
                                         coalesce(v_got::text, 'NULL'), v_case.want);
            END IF;
        END LOOP;
    END LOOP;
    -- The live reads, caught: a gate reader that raises (replaced, or not executable by the
    -- verifying role) is a finding, not the end of the report.
    BEGIN
        PERFORM set_config('iu_verify.w3_master_reads', public.fn_iu_core_routes_enabled()::text, true);
        PERFORM set_config('iu_verify.w3_worker_reads', public.fn_iu_route_worker_enabled()::text, true);
    EXCEPTION WHEN OTHERS THEN
        v_bad := v_bad || ('live gate read raised: ' || SQLERRM);
    END;
    PERFORM set_config('iu_verify.w3_problems', array_to_string(v_bad, '; '), true);

    -- W10: the full scan of the search-path threats (CREATE on public, planted objects).
    BEGIN
        SELECT coalesce(string_agg(format('%s %s (holder %s), fix: %s', t.threat, t.object, t.holder, t.fix), '; '
                                   ORDER BY t.threat, t.object), ''),
               count(*)
          INTO v_msg, v_state
          FROM (SELECT DISTINCT ON (a.object) a.*
                  FROM (SELECT * FROM iu_core.fn_iu_search_path_threats()
                        UNION ALL
                        SELECT * FROM iu_core.fn_iu_search_path_foreign_objects()) a
                 ORDER BY a.object, a.threat DESC) t;
    EXCEPTION WHEN OTHERS THEN
        v_msg := 'not evaluated: ' || SQLERRM;
        v_state := '-1';
    END;
    PERFORM set_config('iu_verify.w10_threats', v_msg, true);
    PERFORM set_config('iu_verify.w10_count', v_state, true);

    -- W7: call the delivery seam. It must raise feature_not_supported (0A000). Arguments
    -- are NULLs of its declared types, so even a seam built one day gets nothing to deliver;
    -- and the transaction is READ ONLY.
    SELECT p.oid::regprocedure,
           coalesce((SELECT string_agg('NULL::' || format_type(a, NULL), ', ' ORDER BY i)
                       FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY u(a, i)), '')
      INTO v_seam, v_args
      FROM pg_proc p
     WHERE p.proname = 'fn_iu_route_deliver' AND p.pronamespace = 'public'::regnamespace
     ORDER BY p.oid LIMIT 1;
    IF v_seam IS NULL THEN
        v_state := 'missing';
        v_msg := 'fn_iu_route_deliver does not exist';
    ELSE
        BEGIN
            EXECUTE format('SELECT %s(%s)', 'public.fn_iu_route_deliver', v_args);
            v_state := 'returned';
            v_msg := format('%s returned instead of raising', v_seam);
        EXCEPTION WHEN OTHERS THEN
            GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_msg = MESSAGE_TEXT;
        END;
    END IF;
    PERFORM set_config('iu_verify.w7_sqlstate', v_state, true);
    PERFORM set_config('iu_verify.w7_message', coalesce(v_seam::text, '-') || ' -> ' || v_state || ': ' || coalesce(v_msg, ''), true);
END;
$verify$;

-- The checks, prepared once: EXECUTE route_worker_checks(true) prints all ten rows,
-- EXECUTE route_worker_checks(false) only the failing ones (counted for the exit status).
PREPARE route_worker_checks(boolean) AS
WITH
w1 AS (
    SELECT coalesce(string_agg(t, ', ' ORDER BY t) FILTER (WHERE to_regclass(t) IS NULL), '') AS missing_tables,
           EXISTS (SELECT 1 FROM pg_attribute a
                    WHERE a.attrelid = to_regclass('public.event_outbox') AND a.attname = 'txid' AND NOT a.attisdropped) AS has_txid,
           to_regclass('public.event_outbox_domain_txid_idx') IS NOT NULL AS has_claim_index
      FROM unnest(ARRAY['public.event_outbox', 'public.event_type_registry', 'public.dot_config', 'public.iu_outbound_route',
                        'public.iu_route_attempt', 'public.iu_route_worker_cursor', 'public.iu_route_dead_letter',
                        'public.queue_heartbeat']) t
),
w2 AS (
    SELECT coalesce(string_agg(f, ', ' ORDER BY f) FILTER (WHERE to_regprocedure(f) IS NULL), '') AS missing_functions,
           NOT EXISTS (SELECT 1 FROM pg_proc p WHERE p.proname = 'fn_iu_route_deliver'
                                                 AND p.pronamespace = 'public'::regnamespace) AS deliver_missing
      FROM unnest(ARRAY['public.fn_iu_route_worker_register(text,text)', 'public.fn_iu_route_worker_run(text,integer)',
                        'public.fn_iu_route_dead_letter_replay(uuid)', 'public.fn_iu_route_worker_reset_cursor(text)',
                        'public.fn_iu_route_worker_health(text)', 'public.fn_iu_core_routes_enabled()',
                        'public.fn_iu_route_worker_enabled()']) f
),
w2v AS (
    SELECT coalesce(string_agg(v, ', ' ORDER BY v) FILTER (WHERE to_regclass(v) IS NULL), '') AS missing_views
      FROM unnest(ARRAY['public.v_iu_route_worker_status', 'public.v_iu_route_dead_letter_open', 'public.v_iu_route_attempt_summary']) v
),
w3 AS (
    SELECT current_setting('iu_verify.w3_problems', true) AS problems,
           (SELECT value FROM public.dot_config WHERE key = 'iu_core.routes_enabled')       AS master_value,
           (SELECT value FROM public.dot_config WHERE key = 'iu_core.route_worker_enabled') AS worker_value,
           nullif(current_setting('iu_verify.w3_master_reads', true), '')::boolean AS master_reads,
           nullif(current_setting('iu_verify.w3_worker_reads', true), '')::boolean AS worker_reads,
           -- A run consults both gates on both of its paths: the full pass and the idle
           -- probe each apply the gate rule to both keys.
           coalesce((SELECT p.prosrc ~ '\mfn_iu_gate_open\M' AND p.prosrc ~ '''iu_core\.routes_enabled'''
                            AND p.prosrc ~ '''iu_core\.route_worker_enabled'''
                       FROM pg_proc p WHERE p.oid = to_regprocedure('iu_core.fn_iu_route_worker_pass(text,integer,integer)')), false)
           AND coalesce((SELECT p.prosrc ~ '\mfn_iu_gate_open\M' AND p.prosrc ~ '''iu_core\.routes_enabled'''
                                AND p.prosrc ~ '''iu_core\.route_worker_enabled'''
                           FROM pg_proc p WHERE p.oid = to_regprocedure('iu_core.fn_iu_route_worker_idle_probe(text,integer)')), false) AS run_checks_both
),
w4 AS (
    SELECT c.worker_name, c.event_domain, c.system_identifier,
           CASE WHEN has_function_privilege('pg_control_system()', 'EXECUTE')
                THEN (SELECT s.system_identifier FROM pg_control_system() s) END AS this_cluster,
           EXISTS (SELECT 1 FROM public.queue_heartbeat h WHERE h.executor_id = 'iu_outbound_default') AS has_heartbeat
      FROM (SELECT 1) one
      LEFT JOIN public.iu_route_worker_cursor c ON c.worker_name = 'iu_outbound_default'
),
-- W5: a unique, non-partial index (constraint or not) over exactly these columns.
w5_want(rel, cols) AS (
    VALUES ('public.iu_route_attempt',       ARRAY['idempotency_key', 'attempt_no', 'event_txid']),
           ('public.iu_route_dead_letter',   ARRAY['idempotency_key']),
           ('public.iu_outbound_route',      ARRAY['event_domain', 'event_type', 'event_stream']),
           ('public.iu_outbound_route',      ARRAY['route_key']),
           ('public.iu_route_worker_cursor', ARRAY['worker_name'])
),
w5 AS (
    SELECT coalesce(string_agg(format('%s(%s)', w.rel, array_to_string(w.cols, ', ')), '; ')
                      FILTER (WHERE NOT EXISTS (
                          SELECT 1 FROM pg_index i
                           WHERE i.indrelid = to_regclass(w.rel) AND i.indisunique AND i.indisvalid
                             AND i.indpred IS NULL AND i.indexprs IS NULL
                             AND (SELECT array_agg(a.attname::text ORDER BY a.attname)
                                    FROM pg_attribute a
                                   WHERE a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey::int2[]))
                                 = (SELECT array_agg(c ORDER BY c) FROM unnest(w.cols) c))), '') AS missing,
           count(*) AS wanted
      FROM w5_want w
),
-- W6: tgtype bits: 1 row, 2 before, 8 delete, 32 truncate; tgenabled O/A fire normally.
w6_want(rel, kind) AS (
    VALUES ('public.iu_route_dead_letter', 'delete'), ('public.iu_route_dead_letter', 'truncate'),
           ('public.iu_route_attempt', 'delete'), ('public.iu_route_attempt', 'truncate')
),
w6 AS (
    SELECT coalesce(string_agg(format('%s %s', w.rel, w.kind), ', ')
                      FILTER (WHERE NOT EXISTS (
                          SELECT 1 FROM pg_trigger tg JOIN pg_proc p ON p.oid = tg.tgfoid
                           WHERE tg.tgrelid = to_regclass(w.rel) AND NOT tg.tgisinternal
                             AND tg.tgenabled IN ('O', 'A')
                             AND tg.tgtype & 2 = 2
                             AND CASE w.kind WHEN 'delete' THEN tg.tgtype & 9 = 9 ELSE tg.tgtype & 32 = 32 END
                             AND p.prosrc ~* '\mraise\s+exception\M')), '') AS missing
      FROM w6_want w
),
w7 AS (
    SELECT current_setting('iu_verify.w7_sqlstate', true) AS sqlstate,
           current_setting('iu_verify.w7_message', true)  AS message
),
w8 AS (
    SELECT (SELECT count(*) FROM (SELECT 1 FROM public.iu_route_attempt
                                   GROUP BY idempotency_key, attempt_no HAVING count(*) > 1) d) AS dup_pairs,
           (SELECT count(*) FROM public.iu_route_attempt) AS attempts
),
-- W9: package functions = non-extension functions in public and iu_core; PUBLIC's EXECUTE read from the
-- ACL (a NULL proacl means the default, which grants EXECUTE to PUBLIC).
w9_public AS (
    SELECT coalesce(string_agg(p.oid::regprocedure::text, ', ' ORDER BY 1), '') AS public_exec,
           count(*) AS n
      FROM pg_proc p
     WHERE p.pronamespace IN ('public'::regnamespace, 'iu_core'::regnamespace)
       AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e')
       AND EXISTS (SELECT 1 FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
                    WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE')
),
w9_want(role, kind, obj, priv) AS (
    VALUES ('dot_executor',   'function', 'public.fn_iu_route_worker_run(text,integer)',   'EXECUTE'),
           ('workflow_admin', 'function', 'public.fn_iu_route_worker_register(text,text)', 'EXECUTE'),
           ('workflow_admin', 'function', 'public.fn_iu_route_worker_reset_cursor(text)',  'EXECUTE'),
           ('workflow_admin', 'function', 'public.fn_iu_route_dead_letter_replay(uuid)',   'EXECUTE'),
           ('workflow_admin', 'function', 'public.fn_iu_route_worker_health(text)',        'EXECUTE'),
           ('workflow_admin', 'view',     'public.v_iu_route_worker_status',               'SELECT'),
           ('workflow_admin', 'view',     'public.v_iu_route_dead_letter_open',            'SELECT'),
           ('workflow_admin', 'view',     'public.v_iu_route_attempt_summary',             'SELECT')
),
w9_grants AS (
    SELECT coalesce(string_agg(format('%s lacks %s on %s', w.role, w.priv, w.obj), '; ')
                      FILTER (WHERE NOT CASE
                          WHEN NOT EXISTS (SELECT 1 FROM pg_roles r WHERE r.rolname = w.role) THEN false
                          WHEN w.kind = 'function' THEN to_regprocedure(w.obj) IS NOT NULL
                                                    AND has_function_privilege(w.role, to_regprocedure(w.obj), w.priv)
                          ELSE to_regclass(w.obj) IS NOT NULL AND has_table_privilege(w.role, to_regclass(w.obj), w.priv)
                      END), '') AS missing
      FROM w9_want w
),
w9_writes AS (
    SELECT coalesce(string_agg(format('%s can %s %s', r.role, pr.priv, t.rel), '; ' ORDER BY r.role, t.rel, pr.priv), '') AS direct
      FROM unnest(ARRAY['dot_executor', 'workflow_admin']) r(role)
      CROSS JOIN unnest(ARRAY['public.iu_route_attempt', 'public.iu_route_dead_letter', 'public.iu_route_worker_cursor', 'public.dot_config']) t(rel)
      CROSS JOIN unnest(ARRAY['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE']) pr(priv)
     WHERE EXISTS (SELECT 1 FROM pg_roles x WHERE x.rolname = r.role)
       AND to_regclass(t.rel) IS NOT NULL
       AND has_table_privilege(r.role, to_regclass(t.rel), pr.priv)
),
checks(ord, "check", pass, detail) AS (
    SELECT 1, 'W1 substrate present',
           missing_tables = '' AND has_txid AND has_claim_index,
           CASE WHEN missing_tables = '' AND has_txid AND has_claim_index
                THEN '8 tables present, event_outbox.txid and the claim index event_outbox_domain_txid_idx present'
                ELSE concat_ws('; ', nullif('missing tables: ' || missing_tables, 'missing tables: '),
                               CASE WHEN NOT has_txid THEN 'event_outbox.txid missing' END,
                               CASE WHEN NOT has_claim_index THEN 'index event_outbox_domain_txid_idx missing' END) END
      FROM w1
    UNION ALL
    SELECT 2, 'W2 functions present',
           missing_functions = '' AND NOT deliver_missing AND missing_views = '',
           CASE WHEN missing_functions = '' AND NOT deliver_missing AND missing_views = ''
                THEN '6 worker functions, 2 gate readers and 3 views present'
                ELSE concat_ws('; ', nullif('missing functions: ' || missing_functions, 'missing functions: '),
                               CASE WHEN deliver_missing THEN 'missing function: fn_iu_route_deliver' END,
                               nullif('missing views: ' || missing_views, 'missing views: ')) END
      FROM w2, w2v
    UNION ALL
    SELECT 3, 'W3 gates fail-closed',
           coalesce(problems, 'not evaluated') = ''
             AND master_reads IS NOT DISTINCT FROM coalesce(master_value = 'true', false)
             AND worker_reads IS NOT DISTINCT FROM coalesce(worker_value = 'true', false)
             AND run_checks_both,
           concat_ws('; ',
               nullif(coalesce(problems, 'simulation did not run'), ''),
               CASE WHEN coalesce(problems, 'x') = '' THEN 'both gate readers open only on exactly ''true'' (simulated: missing key, false, TRUE, '' true'', empty, yes, 1)' END,
               format('live: master %s (value %s), worker %s (value %s)',
                      CASE WHEN master_reads THEN 'OPEN' ELSE 'closed' END, coalesce(quote_literal(master_value), 'missing'),
                      CASE WHEN worker_reads THEN 'OPEN' ELSE 'closed' END, coalesce(quote_literal(worker_value), 'missing')),
               CASE WHEN master_reads IS DISTINCT FROM coalesce(master_value = 'true', false)
                      OR worker_reads IS DISTINCT FROM coalesce(worker_value = 'true', false)
                    THEN 'a gate reader disagrees with the live dot_config value' END,
               CASE WHEN run_checks_both THEN 'fn_iu_route_worker_run consults both gates'
                    ELSE 'fn_iu_route_worker_run does not call both gate readers' END)
      FROM w3
    UNION ALL
    SELECT 4, 'W4 cursor seeded',
           worker_name IS NOT NULL AND event_domain = 'iu' AND has_heartbeat
             AND (system_identifier IS NULL OR this_cluster IS NULL OR system_identifier = this_cluster),
           CASE WHEN worker_name IS NULL THEN 'no cursor for iu_outbound_default: run 060_route_worker_activate.sql'
                ELSE concat_ws('; ',
                    format('cursor iu_outbound_default on domain %s', quote_literal(event_domain)),
                    CASE WHEN event_domain <> 'iu' THEN 'want domain ''iu''' END,
                    CASE WHEN has_heartbeat THEN 'heartbeat row present' ELSE 'heartbeat row missing: run 060_route_worker_activate.sql' END,
                    CASE WHEN system_identifier IS NULL THEN 'no position recorded yet (start of stream)'
                         WHEN this_cluster IS NULL THEN 'cluster id not readable by this role'
                         WHEN system_identifier = this_cluster THEN 'position belongs to this cluster'
                         ELSE format('position recorded in another cluster (%s, this is %s): see runbooks/route-worker-held-back-or-busy.md', system_identifier, this_cluster) END) END
      FROM w4
    UNION ALL
    SELECT 5, 'W5 uniqueness constraints', missing = '',
           CASE WHEN missing = '' THEN format('%s unique keys present: attempt (idempotency_key, attempt_no, event_txid), dead letter idempotency_key, route match, route_key, cursor worker_name', wanted)
                ELSE 'missing unique: ' || missing END
      FROM w5
    UNION ALL
    SELECT 6, 'W6 dead letters undeletable', missing = '',
           CASE WHEN missing = '' THEN 'raising BEFORE DELETE and BEFORE TRUNCATE triggers enabled on iu_route_dead_letter and iu_route_attempt'
                ELSE 'missing or disabled raising trigger: ' || missing END
      FROM w6
    UNION ALL
    SELECT 7, 'W7 delivery seam fail-closed', coalesce(sqlstate = '0A000', false),
           coalesce(message, 'seam probe did not run')
      FROM w7
    UNION ALL
    SELECT 8, 'W8 no duplicate attempts', dup_pairs = 0,
           format('%s duplicated (idempotency_key, attempt_no) pairs over %s attempts', dup_pairs, attempts)
      FROM w8
    UNION ALL
    SELECT 9, 'W9 privileges',
           p.n = 0 AND g.missing = '' AND wr.direct = '',
           CASE WHEN p.n = 0 AND g.missing = '' AND wr.direct = ''
                THEN 'PUBLIC executes no package function; dot_executor runs the worker; workflow_admin registers, resets, replays, reads health and views; no direct writes on worker tables'
                ELSE concat_ws('; ', CASE WHEN p.n > 0 THEN format('PUBLIC executes %s function(s): %s', p.n, p.public_exec) END,
                               nullif(g.missing, ''), nullif('direct table writes: ' || wr.direct, 'direct table writes: ')) END
      FROM w9_public p, w9_grants g, w9_writes wr
    UNION ALL
    SELECT 10, 'W10 search path trusted',
           current_setting('iu_verify.w10_count', true) = '0',
           CASE WHEN current_setting('iu_verify.w10_count', true) = '0'
                THEN 'no untrusted role can CREATE in schema public, no function or operator there belongs to one, and every function in public and iu_core is one the package created'
                ELSE current_setting('iu_verify.w10_threats', true) END
)
SELECT "check", pass, detail
  FROM checks
 WHERE $1 OR NOT pass
 ORDER BY ord;

\echo 'route worker verification W1-W10 (read-only):'
EXECUTE route_worker_checks(true);

EXECUTE route_worker_checks(false) \g /dev/null
SELECT :ROW_COUNT AS route_worker_failed_checks, :ROW_COUNT > 0 AS route_worker_failed \gset
DEALLOCATE route_worker_checks;
ROLLBACK;

\if :route_worker_failed
\echo 'route worker verification: FAILED:' :route_worker_failed_checks 'check(s), see the rows with pass = f'
DO $$ BEGIN
    RAISE EXCEPTION '070_route_worker_verification: W1-W10 not all passing'
        USING ERRCODE = 'IU003', HINT = 'See the rows with pass = f above and runbooks/route-worker-verify.md.';
END $$;
\else
\echo 'route worker verification: all ten checks pass'
\endif
