CREATE OR REPLACE FUNCTION pg_temp.iu_core_plan()
RETURNS TABLE (ord integer, object text, verdict text, detail text)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $plan$
    -- ---------------------------------------------------------------------------------------
    -- The install plan: what `up` would do to each object that already exists in this
    -- database, decided before anything changes. One row per object:
    --   create   the package creates it (nothing of that name exists)
    --   adopt    a table of the first generation with the package's name: kept, every row
    --            and id with it, brought to the package's shape in place (detail: what changes)
    --   replace  a function or view with a package name: replaced by the package's (its old
    --            definition is kept in iu_core.iu_adoption for the rollback)
    --   keep     left exactly as it is (goose_db_version, a user's own view on a package table)
    --   refuse   cannot be adopted safely: detail says why and what to do. Any refusal stops
    --            the install before it changes anything.
    --   installed  the package is already installed: `up` applies the pending migrations only
    -- Written once and used twice: `iu-runner migrate plan` (and `migrate up`, which plans
    -- first) runs it in a transaction it rolls back, and migration 001 runs it first and
    -- refuses to install on any refusal (sql/adopt/plan.sql, included into 001 by
    -- `make generate`). It reads the catalog and, to decide a refusal, a few table scans; it
    -- writes nothing (this temporary function is the only object it creates).
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_ord    integer := 0;
    v_rel    regclass;
    v_kind   "char";
    v_bad    text[];
    v_notes  text[];
    v_rows   bigint;
    v_outbox_rows bigint;
    v_reserved    bigint;
    v_n      bigint;
    v_col    record;
    v_fn     record;
    v_txt    text;
    v_have   text;
BEGIN
    -- Installed already: the package's schema exists. Nothing to adopt.
    IF to_regnamespace('iu_core') IS NOT NULL THEN
        ord := 1; object := 'iu-core'; verdict := 'installed';
        detail := 'schema iu_core exists: up applies the pending migrations (iu-runner migrate status lists them)';
        RETURN NEXT;
        RETURN;
    END IF;

    -- What the installing role may do. It needs CREATE on the database (the schema iu_core),
    -- CREATE on schema public (the API and the tables), and CREATEROLE when the two group
    -- roles do not exist yet; a table it adopts must belong to it (or to a role it is a
    -- member of), since only an owner may alter it.
    v_bad := '{}';
    IF NOT has_database_privilege(current_database(), 'CREATE') THEN
        v_bad := v_bad || format('%s may not CREATE in database %s (GRANT CREATE ON DATABASE %I TO %I, or install as the database owner)',
                                 current_user, current_database(), current_database(), current_user);
    END IF;
    IF to_regnamespace('public') IS NULL THEN
        v_bad := v_bad || 'schema public does not exist (the API lives there)'::text;
    ELSIF NOT has_schema_privilege('public', 'CREATE') THEN
        v_bad := v_bad || format('%s may not CREATE in schema public (GRANT CREATE ON SCHEMA public TO %I)', current_user, current_user);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'dot_executor')
       OR NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'workflow_admin') THEN
        IF NOT (SELECT r.rolcreaterole OR r.rolsuper FROM pg_roles r WHERE r.rolname = current_user) THEN
            v_bad := v_bad || format('the group roles dot_executor and workflow_admin do not exist and %s lacks CREATEROLE (create them first: CREATE ROLE dot_executor NOLOGIN; CREATE ROLE workflow_admin NOLOGIN)', current_user);
        END IF;
    END IF;
    v_ord := v_ord + 1; ord := v_ord; object := 'role ' || current_user;
    IF cardinality(v_bad) > 0 THEN
        verdict := 'refuse'; detail := array_to_string(v_bad, '; ');
    ELSE
        verdict := 'keep'; detail := 'installs as ' || current_user || CASE WHEN (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN ' (superuser)' ELSE ' (not a superuser: enough)' END;
    END IF;
    RETURN NEXT;

    -- The writable-schema rule: no untrusted role may CREATE in public (an overload planted
    -- there would be found by every caller of the API). PostgreSQL 13 and 14 grant it to
    -- PUBLIC by default; the owner of schema public (or a superuser) revokes it.
    v_ord := v_ord + 1; ord := v_ord; object := 'schema public';
    SELECT string_agg(CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END, ', ')
      INTO v_txt
      FROM pg_namespace n CROSS JOIN LATERAL aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) a
     WHERE n.nspname = 'public' AND a.privilege_type = 'CREATE'
       -- the package's trust rule: trusted are superusers and the members of the installing
       -- role (it will own the package); pg_database_owner stands for the database's owner
       AND (a.grantee = 0
            OR NOT coalesce(pg_has_role(CASE WHEN a.grantee = to_regrole('pg_database_owner')
                                             THEN (SELECT d.datdba FROM pg_database d WHERE d.datname = current_database())
                                             ELSE a.grantee END, current_user, 'MEMBER'), false));
    v_bad := '{}';
    IF v_txt IS NOT NULL THEN
        v_bad := v_bad || format('%s may CREATE in schema public: a function planted there would be found by the API''s callers. Fix (as the owner of schema public, %s, or a superuser): REVOKE CREATE ON SCHEMA public FROM %s;',
                                 v_txt, (SELECT nspowner::regrole FROM pg_namespace WHERE nspname = 'public'), v_txt);
    END IF;
    -- What is planted already: functions and operators in public that belong to an
    -- untrusted role (revoking CREATE does not remove them).
    SELECT string_agg(format('%s %s belongs to %s (fix: DROP %s %s;)', x.kind, x.obj, x.owner, upper(x.kind), x.obj), '; ')
      INTO v_txt
      FROM (SELECT 'function' AS kind, p.oid::regprocedure::text AS obj, p.proowner AS owner_oid, p.proowner::regrole::text AS owner
              FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace
            UNION ALL
            SELECT 'operator', o.oid::regoperator::text, o.oprowner, o.oprowner::regrole::text
              FROM pg_operator o WHERE o.oprnamespace = 'public'::regnamespace) x
     WHERE NOT coalesce(pg_has_role(x.owner_oid, current_user, 'MEMBER'), false);
    IF v_txt IS NOT NULL THEN
        v_bad := v_bad || format('planted where the API''s callers would find them: %s', v_txt);
    END IF;
    IF cardinality(v_bad) > 0 THEN
        verdict := 'refuse'; detail := array_to_string(v_bad, '; ');
    ELSE
        verdict := 'keep'; detail := 'no untrusted role may CREATE in it, and nothing in it belongs to one';
    END IF;
    RETURN NEXT;

    -- The two group roles (cluster-wide).
    FOREACH v_txt IN ARRAY ARRAY['dot_executor', 'workflow_admin'] LOOP
        v_ord := v_ord + 1; ord := v_ord; object := 'role ' || v_txt;
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = v_txt) THEN
            verdict := 'adopt'; detail := 'exists: kept with its members and grants';
        ELSE
            verdict := 'create'; detail := 'NOLOGIN group role';
        END IF;
        RETURN NEXT;
    END LOOP;

    -- The tables, one by one: the columns the package needs (name, type), which the legacy
    -- shape of the first generation has (some under other names), and what else refuses.
    FOR v_col IN
        SELECT * FROM (VALUES
            (1, 'event_outbox', ARRAY['id uuid', 'event_domain text', 'event_type text', 'event_stream text',
                                      'delivery_lane text', 'event_severity text', 'event_subject_table text',
                                      'event_subject_ref text', 'safe_payload jsonb', 'occurred_at timestamp with time zone',
                                      'created_at timestamp with time zone']),
            (2, 'iu_route_attempt', ARRAY['id bigint', 'event_ref uuid', 'status text', 'idempotency_key text',
                                          'attempt_no integer', 'created_at timestamp with time zone']),
            (3, 'event_type_registry', ARRAY['event_domain text', 'event_type text']),
            (4, 'dot_config', ARRAY['key text', 'value text']),
            (5, 'iu_outbound_route', ARRAY['event_domain text', 'event_type text', 'event_stream text', 'route_key text',
                                           'enabled boolean', 'dry_run boolean']),
            (6, 'iu_route_worker_cursor', ARRAY['worker_name text', 'event_domain text', 'last_created_at timestamp with time zone',
                                                'last_event_id uuid']),
            (7, 'iu_route_dead_letter', ARRAY['id uuid', 'worker_name text', 'event_id uuid', 'event_domain text', 'event_type text',
                                              'event_stream text', 'route_key text', 'idempotency_key text', 'event_snapshot jsonb',
                                              'error_code text', 'error_message text', 'failed_attempts integer',
                                              'first_failed_at timestamp with time zone', 'last_failed_at timestamp with time zone',
                                              'resolved_at timestamp with time zone', 'resolution text', 'resolved_by text']),
            (8, 'queue_heartbeat', ARRAY['executor_name|executor_id text', 'executor_kind text', 'status text',
                                         'last_tick_at|last_beat_at timestamp with time zone', 'ticks_total bigint',
                                         'metadata|last_beat_payload jsonb']),
            (9, 'job_queue', NULL), (10, 'job_dead_letter', NULL), (11, 'job_kind_pause', NULL),
            (12, 'queue_stale_alert', NULL), (13, 'iu_route_attempt_tally', NULL),
            (14, 'iu_history_partition', NULL), (15, 'iu_retention_ledger', NULL)
        ) t(n, name, cols) ORDER BY n
    LOOP
        v_ord := v_ord + 1; ord := v_ord; object := 'table ' || v_col.name;
        v_rel := to_regclass('public.' || quote_ident(v_col.name));
        IF v_rel IS NULL THEN
            verdict := 'create'; detail := 'does not exist';
            RETURN NEXT;
            CONTINUE;
        END IF;
        v_bad := '{}'; v_notes := '{}';
        SELECT c.relkind INTO v_kind FROM pg_class c WHERE c.oid = v_rel;
        IF v_col.cols IS NULL THEN
            v_bad := v_bad || format('a %s of this name exists but the first generation had none: rename or drop it', CASE v_kind WHEN 'v' THEN 'view' ELSE 'table' END);
        ELSIF v_kind = 'p' THEN
            v_bad := v_bad || 'it is partitioned already (by another key): the package partitions it by transaction id and attaches the existing rows as one partition, which a partitioned table cannot be'::text;
        ELSIF v_kind <> 'r' THEN
            v_bad := v_bad || format('it is not a table (relkind %s)', v_kind);
        ELSE
            IF NOT pg_has_role(current_user, (SELECT relowner FROM pg_class WHERE oid = v_rel), 'USAGE') THEN
                v_bad := v_bad || format('it belongs to %s: adopting alters it, which only its owner may (install as %s, or GRANT %s TO %s)',
                                         (SELECT relowner::regrole FROM pg_class WHERE oid = v_rel),
                                         (SELECT relowner::regrole FROM pg_class WHERE oid = v_rel),
                                         (SELECT relowner::regrole FROM pg_class WHERE oid = v_rel), current_user);
            END IF;
            -- every needed column, by one of its names, of its type
            FOREACH v_txt IN ARRAY v_col.cols LOOP
                SELECT string_agg(format('%s %s', a.attname, format_type(a.atttypid, a.atttypmod)), ', ')
                  INTO v_have
                  FROM pg_attribute a
                 WHERE a.attrelid = v_rel AND a.attnum > 0 AND NOT a.attisdropped
                   AND a.attname = ANY (string_to_array(split_part(v_txt, ' ', 1), '|'));
                IF v_have IS NULL THEN
                    v_bad := v_bad || format('column %s is missing', replace(split_part(v_txt, ' ', 1), '|', ' (or ') ||
                                             CASE WHEN strpos(v_txt, '|') > 0 THEN ')' ELSE '' END);
                ELSIF substr(v_have, strpos(v_have, ' ') + 1) <> substr(v_txt, strpos(v_txt, ' ') + 1) THEN
                    v_bad := v_bad || format('column %s, want %s', v_have, substr(v_txt, strpos(v_txt, ' ') + 1));
                END IF;
            END LOOP;
            -- a foreign key into a history table: the partitioned table has no global key
            IF v_col.name IN ('event_outbox', 'iu_route_attempt') THEN
                SELECT string_agg(format('%s on %s', c.conname, c.conrelid::regclass), ', ') INTO v_txt
                  FROM pg_constraint c WHERE c.contype = 'f' AND c.confrelid = v_rel;
                IF v_txt IS NOT NULL THEN
                    v_bad := v_bad || format('foreign key %s references it: the package partitions it by transaction id, and a partitioned table''s keys include that id, so the reference could not be kept (drop the foreign key, or keep the referencing table''s check in a trigger of your own)', v_txt);
                END IF;
            END IF;
        END IF;
        -- what each adopted table needs beyond its columns
        IF cardinality(v_bad) = 0 AND v_col.name = 'event_outbox' THEN
            IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = v_rel AND attname = 'txid' AND NOT attisdropped) THEN
                v_bad := v_bad || 'it has a txid column already: the package stamps that column itself (rename yours)'::text;
            END IF;
            IF NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conrelid = v_rel AND c.contype IN ('p', 'u')
                              AND c.conkey = ARRAY[(SELECT attnum FROM pg_attribute WHERE attrelid = v_rel AND attname = 'id')]) THEN
                v_bad := v_bad || 'id is not its primary key (or unique): event ids must be unique'::text;
            END IF;
            -- One scan of the log for all it must know (the plan runs before the install and
            -- again inside it, while producers insert: the rows they add before the log is
            -- locked are re-stamped under the lock, so the plan is kept to one pass).
            EXECUTE 'SELECT count(*),
                            count(*) FILTER (WHERE delivery_lane NOT IN (''immediate'', ''standard'', ''batch'')
                                                OR event_severity NOT IN (''debug'', ''info'', ''warning'', ''critical'')),
                            count(*) FILTER (WHERE event_type IN (''queue_worker_silent'', ''queue_worker_recovered''))
                       FROM public.event_outbox'
               INTO v_outbox_rows, v_n, v_reserved;
            IF v_n > 0 THEN
                v_bad := v_bad || format('%s rows have a delivery_lane outside immediate/standard/batch or an event_severity outside debug/info/warning/critical, so some producer writes values the package refuses (change that producer first; the rows themselves are kept)', v_n);
            END IF;
            v_n := v_reserved;
            IF v_n > 0 THEN
                v_notes := v_notes || format('%s rows carry the package''s reserved alert types (written by someone else): kept', v_n);
            END IF;
        END IF;
        IF cardinality(v_bad) = 0 AND v_col.name = 'iu_route_attempt' THEN
            IF NOT EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = v_rel AND i.indisunique AND i.indpred IS NULL
                              AND (SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_attribute a
                                    WHERE a.attrelid = v_rel AND a.attnum = ANY (i.indkey::int2[])) = ARRAY['attempt_no', 'idempotency_key']) THEN
                EXECUTE 'SELECT count(*) FROM (SELECT 1 FROM public.iu_route_attempt GROUP BY idempotency_key, attempt_no HAVING count(*) > 1) d' INTO v_n;
                IF v_n > 0 THEN
                    v_bad := v_bad || format('UNIQUE (idempotency_key, attempt_no) is missing and %s keys occur twice: audit rows are never deleted, so the package''s key cannot be built (find them: SELECT idempotency_key, attempt_no FROM iu_route_attempt GROUP BY 1, 2 HAVING count(*) > 1)', v_n);
                ELSE
                    v_notes := v_notes || 'UNIQUE (idempotency_key, attempt_no) is built (no key occurs twice)'::text;
                END IF;
            END IF;
        END IF;
        IF cardinality(v_bad) > 0 THEN
            verdict := 'refuse'; detail := array_to_string(v_bad, '; ');
        ELSE
            IF v_col.name = 'event_outbox' THEN
                v_rows := v_outbox_rows;
            ELSE
                EXECUTE format('SELECT count(*) FROM %s', v_rel) INTO v_rows;
            END IF;
            verdict := 'adopt';
            detail := format('%s %s kept', v_rows, CASE WHEN v_rows = 1 THEN 'row' ELSE 'rows' END) || CASE v_col.name
                WHEN 'event_outbox' THEN '; adds txid, the package''s row rules for new rows (existing rows are not re-checked) and the claim index; becomes partitioned by txid with these rows as one partition, nothing copied; producers keep inserting throughout'
                WHEN 'iu_route_attempt' THEN '; adds worker_name, route_key, error_code, error_message (from each row''s detail and error) and event_txid; the idempotency keys stay as they are, so no event is audited twice'
                WHEN 'iu_route_worker_cursor' THEN '; the keyset position becomes the package''s snapshot position: the worker routes exactly the events it never audited (those after the keyset and those it skipped), each once'
                WHEN 'queue_heartbeat' THEN '; executor_name, last_tick_at, metadata and created_at become executor_id, last_beat_at, last_beat_payload and registered_at; each row becomes a registered executor with the default cadence and threshold of its kind'
                WHEN 'dot_config' THEN '; every key and value kept (the gates as they are); hc_executor_last_run becomes a heartbeat row'
                WHEN 'iu_route_dead_letter' THEN '; every dead letter stays replayable'
                ELSE '' END
                || CASE WHEN cardinality(v_notes) > 0 THEN '; ' || array_to_string(v_notes, '; ') ELSE '' END;
        END IF;
        RETURN NEXT;
    END LOOP;

    -- Functions and views of the package's names that exist already: the package's replace
    -- them (the old definitions are kept for the rollback). The names are those of the
    -- package's API (fn_iu_adopt_legacy_callables holds it; a test keeps the two lists
    -- equal), and the first generation's dead-letter trigger function. A caller that could
    -- execute the old function only through PUBLIC loses that (the package grants no
    -- function to PUBLIC); a role that may INSERT into event_outbox keeps fn_iu_emit_event
    -- (granted to it).
    FOR v_fn IN
        SELECT p.oid::regprocedure AS sig, p.proname,
               EXISTS (SELECT 1 FROM aclexplode(coalesce(p.proacl, acldefault('f', p.proowner))) a
                        WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE') AS public_exec
          FROM pg_proc p
         WHERE p.pronamespace = 'public'::regnamespace
           AND p.proname IN ('fn_cut_heartbeat_ping', 'fn_iu_core_routes_enabled', 'fn_iu_emit_event',
                             'fn_iu_event_outbox_rebase_foreign_txids', 'fn_iu_gate_open',
                             'fn_iu_partition_maintain', 'fn_iu_retention_run',
                             'fn_iu_route_dead_letter_replay', 'fn_iu_route_dead_letter_replay_many',
                             'fn_iu_route_deliver', 'fn_iu_route_worker_batch_limits',
                             'fn_iu_route_worker_enabled', 'fn_iu_route_worker_health',
                             'fn_iu_route_worker_register', 'fn_iu_route_worker_reset_cursor',
                             'fn_iu_route_worker_run', 'fn_job_claim', 'fn_job_complete',
                             'fn_job_complete_many', 'fn_job_dead_letter_replay',
                             'fn_job_dead_letter_replay_many', 'fn_job_dead_letter_resolve',
                             'fn_job_enqueue', 'fn_job_enqueue_many', 'fn_job_extend_lease', 'fn_job_fail',
                             'fn_job_fail_many', 'fn_job_kind_pause', 'fn_job_kind_resume', 'fn_job_prune',
                             'fn_job_reap_expired_leases', 'fn_queue_heartbeat_pause',
                             'fn_queue_heartbeat_register', 'fn_queue_heartbeat_resume',
                             'fn_queue_heartbeat_tick', 'fn_queue_heartbeat_write',
                             'fn_queue_notify_enabled', 'fn_queue_runner_beat', 'fn_queue_stale_check',
                             'fn_iu_route_dead_letter_no_delete')
         ORDER BY 2, 1
    LOOP
        v_ord := v_ord + 1; ord := v_ord; object := 'function ' || v_fn.sig::text; verdict := 'replace';
        detail := 'replaced by the package''s'
            || CASE WHEN v_fn.public_exec THEN '; PUBLIC may execute it today, the package''s is granted to its roles'
                    || CASE WHEN v_fn.proname = 'fn_iu_emit_event' THEN ' and to every role that may INSERT into event_outbox' ELSE '' END
                    || ' (grant dot_executor to any other caller)'
                    ELSE '' END;
        RETURN NEXT;
    END LOOP;
    FOR v_fn IN
        SELECT c.oid::regclass AS rel, c.relname
          FROM pg_class c
         WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'v'
           AND c.relname IN ('v_iu_route_worker_status', 'v_iu_route_dead_letter_open', 'v_iu_route_attempt_summary', 'v_queue_health')
    LOOP
        v_ord := v_ord + 1; ord := v_ord; object := 'view ' || v_fn.rel::text; verdict := 'replace';
        detail := 'replaced by the package''s';
        RETURN NEXT;
    END LOOP;
    -- The user's own views on the tables adopted: kept, and still reading the same tables.
    FOR v_fn IN
        SELECT DISTINCT v.oid::regclass AS rel
          FROM pg_depend d
          JOIN pg_rewrite w ON w.oid = d.objid
          JOIN pg_class v ON v.oid = w.ev_class
         WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass
           AND d.refobjid IN (SELECT to_regclass('public.' || t) FROM unnest(ARRAY['event_outbox', 'iu_route_attempt',
                               'iu_route_worker_cursor', 'iu_route_dead_letter', 'queue_heartbeat', 'dot_config']) t)
           AND v.relname NOT IN ('v_iu_route_worker_status', 'v_iu_route_dead_letter_open', 'v_iu_route_attempt_summary', 'v_queue_health')
           AND v.oid <> d.refobjid
         ORDER BY 1
    LOOP
        v_ord := v_ord + 1; ord := v_ord; object := 'view ' || v_fn.rel::text; verdict := 'keep';
        detail := 'recreated as it is around the adoption, so it reads the adopted table (new rows included)';
        RETURN NEXT;
    END LOOP;

    v_ord := v_ord + 1; ord := v_ord; object := 'table goose_db_version';
    IF to_regclass('public.goose_db_version') IS NOT NULL THEN
        verdict := 'keep'; detail := 'this database''s own goose history: never read or written (the package records itself in iu_core_db_version)';
    ELSE
        verdict := 'keep'; detail := 'absent, and the package never creates it (its history is iu_core_db_version)';
    END IF;
    RETURN NEXT;
    v_ord := v_ord + 1; ord := v_ord; object := 'schema iu_core'; verdict := 'create';
    detail := 'the package''s internals, owned by ' || current_user;
    RETURN NEXT;
END;
$plan$;
