-- 016_job_queue_enqueue.sql
--
-- job_queue's single-column rules move from table CHECKs into domains, for the single
-- enqueue's rate (issue 23). A table migration: once released it is never edited again.
--
-- Why. PostgreSQL re-reads and re-plans every CHECK of a table for each INSERT statement:
-- the stored expression is parsed from its text, and an inlined SQL function such as
-- iu_core.fn_iu_payload_is_clean is re-parsed from its source (and de-toasted first: its
-- header comment makes the source larger than a page). A plain INSERT of 20,000 rows pays
-- that once; fn_job_enqueue called 20,000 times in one statement (a trigger, an INSERT ...
-- SELECT over orders, a loop in a migration) paid it 20,000 times: counted by callgrind,
-- 800k instructions a call against 76k a row of the plain INSERT, of which the hygiene CHECK
-- alone was ~370k and the six other single-column CHECKs ~130k. A domain's constraints are
-- planned once per session and kept (the type cache), and a value that is already of the
-- column's domain is not checked again by the INSERT: fn_job_enqueue checks its arguments
-- once, into variables of these domains, and its INSERT then prepares no rule at all. The
-- rules hold for every write path as before (INSERT, UPDATE, COPY), with the same names, so
-- a refusal names the same constraint (SQLSTATE 23514). The event log's rules live in
-- domains for the same reason (003).
--
--   column                        domain                          constraint(s)
--   job_kind                      iu_core.iu_job_kind             job_queue_job_kind_check
--   event_domain                  iu_core.iu_job_domain           job_queue_event_domain_check
--   status                        iu_core.iu_job_status           job_queue_status_check
--   payload                       iu_core.iu_job_payload          job_queue_payload_object, job_queue_payload_hygiene
--   attempt                       iu_core.iu_job_attempt          job_queue_attempt_check
--   max_attempts                  iu_core.iu_job_max_attempts     job_queue_max_attempts_check
--
-- The two rules over several columns (job_queue_lease_ck, job_queue_token_ck) stay table
-- CHECKs: a domain sees one value.
--
-- What it costs once: the column types change under an ACCESS EXCLUSIVE lock on job_queue,
-- taken in short attempts (iu_core.fn_iu_adopt_lock: 200 ms each, so claims and enqueues
-- never queue long behind the request). The domains are bare when the columns take them, so
-- no row is rewritten; but PostgreSQL rebuilds every index whose definition names a changed
-- column, and all five partial indexes name status: the lock is held while they are rebuilt,
-- about a second per million rows here. Prune first (fn_job_prune) on a queue that keeps
-- many finished jobs. Views that read the changed columns (v_queue_health, and any of your
-- own, with the views built on them) are set aside and recreated as they were (definition,
-- owner, grants, comment, options).
--
-- The rules are added NOT VALID: every existing row met them (the table's CHECKs, dropped in
-- the same transaction, were the same rules), so a scan would prove nothing and would hold
-- the lock for the hygiene test of every stored payload. NOT VALID changes nothing for new
-- rows: every row written from here on is checked.

-- +goose Up
CREATE DOMAIN iu_core.iu_job_kind AS text;
CREATE DOMAIN iu_core.iu_job_domain AS text;
CREATE DOMAIN iu_core.iu_job_status AS text;
CREATE DOMAIN iu_core.iu_job_payload AS jsonb;
CREATE DOMAIN iu_core.iu_job_attempt AS integer;
CREATE DOMAIN iu_core.iu_job_max_attempts AS integer;

-- +goose StatementBegin
DO $$
DECLARE
    v_path  text := pg_catalog.current_setting('search_path');
    v_views jsonb := '[]';
    v       record;
    g       jsonb;
BEGIN
    -- Names in the saved definitions come out schema-qualified.
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    PERFORM iu_core.fn_iu_adopt_lock(ARRAY['public.job_queue'::pg_catalog.regclass]);

    -- The views that read a changed column, and every view built on them, deepest first.
    FOR v IN
        WITH RECURSIVE deps(view_oid, depth) AS (
            SELECT DISTINCT w.ev_class, 1
              FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_rewrite w ON w.oid = d.objid
              JOIN pg_catalog.pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
             WHERE d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass
               AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
               AND d.refobjid = 'public.job_queue'::pg_catalog.regclass
               AND a.attname IN ('job_kind', 'event_domain', 'status', 'payload', 'attempt', 'max_attempts')
               AND w.ev_class <> d.refobjid
            UNION
            SELECT w.ev_class, deps.depth + 1
              FROM deps JOIN pg_catalog.pg_depend d ON d.refobjid = deps.view_oid
                                                   AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
              JOIN pg_catalog.pg_rewrite w ON w.oid = d.objid AND d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass
             WHERE w.ev_class <> deps.view_oid AND deps.depth < 50
        )
        SELECT c.oid, c.oid::pg_catalog.regclass::text AS rel, c.relkind, d.depth, c.relowner::pg_catalog.regrole::text AS owner,
               c.relacl, c.reloptions, pg_catalog.obj_description(c.oid, 'pg_class') AS comment
          FROM (SELECT deps.view_oid, max(deps.depth) AS depth FROM deps GROUP BY deps.view_oid) d
          JOIN pg_catalog.pg_class c ON c.oid = d.view_oid
         WHERE c.relkind IN ('v', 'm')
         ORDER BY d.depth DESC, c.oid
    LOOP
        v_views := v_views || pg_catalog.jsonb_build_object(
            'rel', v.rel, 'kind', CASE v.relkind WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'VIEW' END,
            'definition', pg_catalog.format('CREATE %s %s%s AS %s',
                CASE v.relkind WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'VIEW' END, v.rel,
                CASE WHEN v.reloptions IS NOT NULL THEN ' WITH (' || pg_catalog.array_to_string(v.reloptions, ', ') || ')' ELSE '' END,
                pg_catalog.rtrim(pg_catalog.pg_get_viewdef(v.oid, true), E'; \n')),
            'owner', v.owner, 'comment', v.comment,
            'grants', coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                                  'grantee', CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::text) END,
                                  'privilege', a.privilege_type, 'grantable', a.is_grantable))
                                  FROM pg_catalog.aclexplode(v.relacl) a
                                 WHERE a.grantee OPERATOR(pg_catalog.<>) v.owner::pg_catalog.regrole::pg_catalog.oid), '[]'));
        EXECUTE pg_catalog.format('DROP %s %s', CASE v.relkind WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'VIEW' END, v.rel);
    END LOOP;

    ALTER TABLE public.job_queue
        DROP CONSTRAINT job_queue_job_kind_check,
        DROP CONSTRAINT job_queue_event_domain_check,
        DROP CONSTRAINT job_queue_status_check,
        DROP CONSTRAINT job_queue_payload_object,
        DROP CONSTRAINT job_queue_payload_hygiene,
        DROP CONSTRAINT job_queue_attempt_check,
        DROP CONSTRAINT job_queue_max_attempts_check,
        ALTER COLUMN job_kind     TYPE iu_core.iu_job_kind,
        ALTER COLUMN event_domain TYPE iu_core.iu_job_domain,
        ALTER COLUMN status       TYPE iu_core.iu_job_status,
        ALTER COLUMN payload      TYPE iu_core.iu_job_payload,
        ALTER COLUMN attempt      TYPE iu_core.iu_job_attempt,
        ALTER COLUMN max_attempts TYPE iu_core.iu_job_max_attempts;

    -- The views again, shallowest first, as they were.
    FOR i IN REVERSE pg_catalog.jsonb_array_length(v_views) - 1 .. 0 LOOP
        EXECUTE v_views -> i ->> 'definition';
        IF v_views -> i ->> 'owner' <> pg_catalog.quote_ident(current_user) THEN
            EXECUTE pg_catalog.format('ALTER %s %s OWNER TO %s', v_views -> i ->> 'kind', v_views -> i ->> 'rel', v_views -> i ->> 'owner');
        END IF;
        FOR g IN SELECT * FROM pg_catalog.jsonb_array_elements(v_views -> i -> 'grants') LOOP
            EXECUTE pg_catalog.format('GRANT %s ON %s TO %s%s', g ->> 'privilege', v_views -> i ->> 'rel', g ->> 'grantee',
                                      CASE WHEN (g ->> 'grantable')::boolean THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
        IF v_views -> i ->> 'comment' IS NOT NULL THEN
            EXECUTE pg_catalog.format('COMMENT ON %s %s IS %L', v_views -> i ->> 'kind', v_views -> i ->> 'rel', v_views -> i ->> 'comment');
        END IF;
    END LOOP;
    PERFORM pg_catalog.set_config('search_path', v_path, true);
END;
$$;
-- +goose StatementEnd

ALTER DOMAIN iu_core.iu_job_kind ADD CONSTRAINT job_queue_job_kind_check CHECK (VALUE <> '') NOT VALID;
ALTER DOMAIN iu_core.iu_job_domain ADD CONSTRAINT job_queue_event_domain_check CHECK (VALUE <> '') NOT VALID;
ALTER DOMAIN iu_core.iu_job_status ADD CONSTRAINT job_queue_status_check
    CHECK (VALUE IN ('queued', 'running', 'succeeded', 'dead')) NOT VALID;
ALTER DOMAIN iu_core.iu_job_payload ADD CONSTRAINT job_queue_payload_object CHECK (jsonb_typeof(VALUE) = 'object') NOT VALID;
ALTER DOMAIN iu_core.iu_job_payload ADD CONSTRAINT job_queue_payload_hygiene CHECK (iu_core.fn_iu_payload_is_clean(VALUE)) NOT VALID;
ALTER DOMAIN iu_core.iu_job_attempt ADD CONSTRAINT job_queue_attempt_check CHECK (VALUE >= 0) NOT VALID;
ALTER DOMAIN iu_core.iu_job_max_attempts ADD CONSTRAINT job_queue_max_attempts_check CHECK (VALUE > 0) NOT VALID;

-- +goose Down
-- The columns back to their base types, the rules back to table CHECKs of the same names
-- (validated: one scan of the table), the views set aside and recreated as on the way up.
-- +goose StatementBegin
DO $$
DECLARE
    v_path  text := pg_catalog.current_setting('search_path');
    v_views jsonb := '[]';
    v       record;
    g       jsonb;
BEGIN
    PERFORM pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);
    PERFORM iu_core.fn_iu_adopt_lock(ARRAY['public.job_queue'::pg_catalog.regclass]);
    FOR v IN
        WITH RECURSIVE deps(view_oid, depth) AS (
            SELECT DISTINCT w.ev_class, 1
              FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_rewrite w ON w.oid = d.objid
              JOIN pg_catalog.pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
             WHERE d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass
               AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
               AND d.refobjid = 'public.job_queue'::pg_catalog.regclass
               AND a.attname IN ('job_kind', 'event_domain', 'status', 'payload', 'attempt', 'max_attempts')
               AND w.ev_class <> d.refobjid
            UNION
            SELECT w.ev_class, deps.depth + 1
              FROM deps JOIN pg_catalog.pg_depend d ON d.refobjid = deps.view_oid
                                                   AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
              JOIN pg_catalog.pg_rewrite w ON w.oid = d.objid AND d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass
             WHERE w.ev_class <> deps.view_oid AND deps.depth < 50
        )
        SELECT c.oid, c.oid::pg_catalog.regclass::text AS rel, c.relkind, d.depth, c.relowner::pg_catalog.regrole::text AS owner,
               c.relacl, c.reloptions, pg_catalog.obj_description(c.oid, 'pg_class') AS comment
          FROM (SELECT deps.view_oid, max(deps.depth) AS depth FROM deps GROUP BY deps.view_oid) d
          JOIN pg_catalog.pg_class c ON c.oid = d.view_oid
         WHERE c.relkind IN ('v', 'm')
         ORDER BY d.depth DESC, c.oid
    LOOP
        v_views := v_views || pg_catalog.jsonb_build_object(
            'rel', v.rel, 'kind', CASE v.relkind WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'VIEW' END,
            'definition', pg_catalog.format('CREATE %s %s%s AS %s',
                CASE v.relkind WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'VIEW' END, v.rel,
                CASE WHEN v.reloptions IS NOT NULL THEN ' WITH (' || pg_catalog.array_to_string(v.reloptions, ', ') || ')' ELSE '' END,
                pg_catalog.rtrim(pg_catalog.pg_get_viewdef(v.oid, true), E'; \n')),
            'owner', v.owner, 'comment', v.comment,
            'grants', coalesce((SELECT pg_catalog.jsonb_agg(pg_catalog.jsonb_build_object(
                                  'grantee', CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.quote_ident(a.grantee::pg_catalog.regrole::text) END,
                                  'privilege', a.privilege_type, 'grantable', a.is_grantable))
                                  FROM pg_catalog.aclexplode(v.relacl) a
                                 WHERE a.grantee OPERATOR(pg_catalog.<>) v.owner::pg_catalog.regrole::pg_catalog.oid), '[]'));
        EXECUTE pg_catalog.format('DROP %s %s', CASE v.relkind WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE 'VIEW' END, v.rel);
    END LOOP;

    ALTER TABLE public.job_queue
        ALTER COLUMN job_kind     TYPE text,
        ALTER COLUMN event_domain TYPE text,
        ALTER COLUMN status       TYPE text,
        ALTER COLUMN payload      TYPE jsonb,
        ALTER COLUMN attempt      TYPE integer,
        ALTER COLUMN max_attempts TYPE integer,
        ADD CONSTRAINT job_queue_job_kind_check CHECK (job_kind <> ''),
        ADD CONSTRAINT job_queue_event_domain_check CHECK (event_domain <> ''),
        ADD CONSTRAINT job_queue_status_check CHECK (status IN ('queued', 'running', 'succeeded', 'dead')),
        ADD CONSTRAINT job_queue_payload_object CHECK (jsonb_typeof(payload) = 'object'),
        ADD CONSTRAINT job_queue_payload_hygiene CHECK (iu_core.fn_iu_payload_is_clean(payload)),
        ADD CONSTRAINT job_queue_attempt_check CHECK (attempt >= 0),
        ADD CONSTRAINT job_queue_max_attempts_check CHECK (max_attempts > 0);

    FOR i IN REVERSE pg_catalog.jsonb_array_length(v_views) - 1 .. 0 LOOP
        EXECUTE v_views -> i ->> 'definition';
        IF v_views -> i ->> 'owner' <> pg_catalog.quote_ident(current_user) THEN
            EXECUTE pg_catalog.format('ALTER %s %s OWNER TO %s', v_views -> i ->> 'kind', v_views -> i ->> 'rel', v_views -> i ->> 'owner');
        END IF;
        FOR g IN SELECT * FROM pg_catalog.jsonb_array_elements(v_views -> i -> 'grants') LOOP
            EXECUTE pg_catalog.format('GRANT %s ON %s TO %s%s', g ->> 'privilege', v_views -> i ->> 'rel', g ->> 'grantee',
                                      CASE WHEN (g ->> 'grantable')::boolean THEN ' WITH GRANT OPTION' ELSE '' END);
        END LOOP;
        IF v_views -> i ->> 'comment' IS NOT NULL THEN
            EXECUTE pg_catalog.format('COMMENT ON %s %s IS %L', v_views -> i ->> 'kind', v_views -> i ->> 'rel', v_views -> i ->> 'comment');
        END IF;
    END LOOP;
    PERFORM pg_catalog.set_config('search_path', v_path, true);
END;
$$;
-- +goose StatementEnd
DROP DOMAIN iu_core.iu_job_max_attempts;
DROP DOMAIN iu_core.iu_job_attempt;
DROP DOMAIN iu_core.iu_job_payload;
DROP DOMAIN iu_core.iu_job_status;
DROP DOMAIN iu_core.iu_job_domain;
DROP DOMAIN iu_core.iu_job_kind;
