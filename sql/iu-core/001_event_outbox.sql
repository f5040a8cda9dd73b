-- 001_event_outbox.sql
--
-- Adds the shared, append-only event log every consumer reads, and the payload-hygiene
-- helpers the whole package uses.
--
-- Why a txid column: consumers keep their own position (the log has no delivery state).
-- A keyset on (created_at, id) skips rows that commit late, and an xmin cut-off stalls
-- every consumer behind any long transaction. Recording the inserting top-level
-- transaction id lets a consumer read "what became visible since my last snapshot"
-- (PgQ's snapshot-difference batching, see 009), so only a slow transaction's own rows wait.
--
-- Payload hygiene: no stored or signalled payload may carry a denylisted key at any
-- depth (objects nested in objects or inside arrays too). The check is one jsonpath
-- existence test, so it is cheap on the insert path; the key list lives in one place.

-- +goose Up

-- The writable-schema rule. Every package function runs with search_path = public, pg_temp,
-- and PostgreSQL resolves a function or operator call against every schema on that path:
-- a role that may CREATE in public can add a better-matching overload of a built-in (a
-- jsonb_build_object(text, boolean, text, text) beats the built-in VARIADIC "any" one) and
-- a SECURITY DEFINER function would then run it with the package owner's rights. So the
-- package refuses to install, and every SECURITY DEFINER function refuses to run, while
-- such a role exists. One exception, for the producers' insert rate: fn_iu_emit_event's
-- accepting path resolves nothing a planted object could win (every call qualified and
-- exactly typed) and skips the guard; its refusing paths call it (see 004).
--
-- Trusted roles: superusers, the package owner (the role that owns these functions), and
-- every role that is a member of the owner (it can already act as the owner). Everyone else,
-- and PUBLIC, is untrusted. pg_database_owner (PostgreSQL 14+: the default owner of public)
-- stands for the current database's owner. pg_temp is not a threat: functions and
-- operators are never looked up in pg_temp.

-- +goose StatementBegin
CREATE FUNCTION fn_iu_package_owner()
RETURNS oid
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    -- The package owner: whoever owns this function (the role that ran the migrations).
    SELECT p.proowner FROM pg_catalog.pg_proc p
     WHERE p.oid = 'public.fn_iu_package_owner()'::pg_catalog.regprocedure
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_untrusted_roles(p_roles oid[])
RETURNS TABLE (role oid)
LANGUAGE sql STABLE
AS $$
    -- The trust rule, in one place: which of p_roles are untrusted. 0 is PUBLIC (everyone):
    -- never trusted. pg_database_owner (PostgreSQL 14+; to_regrole gives NULL on 13) is read
    -- as the database's owner. Trusted means pg_has_role(role, owner, 'MEMBER'), which is
    -- true for the owner itself, its members and every superuser (a superuser is a member
    -- of every role), and false for a role that no longer exists. Membership and superuser
    -- status come from the role caches, so the per-call guard scans no role table. Written
    -- to be inlined (no SET, everything pg_catalog-qualified, one SELECT) so the guard pays
    -- for one cached plan, not for a function call per role; it is only ever inlined into
    -- queries of functions that pin search_path = pg_catalog.
    SELECT g.role
      FROM pg_catalog.unnest(p_roles) AS g(role)
     WHERE g.role = 0
        OR NOT coalesce(pg_catalog.pg_has_role(
               CASE WHEN g.role = pg_catalog.to_regrole('pg_database_owner')
                    THEN (SELECT d.datdba FROM pg_catalog.pg_database d
                           WHERE d.datname = pg_catalog.current_database())
                    ELSE g.role END,
               (SELECT p.proowner FROM pg_catalog.pg_proc p
                 WHERE p.oid = 'public.fn_iu_package_owner()'::pg_catalog.regprocedure),
               'MEMBER'), false)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_search_path_create_threats()
RETURNS TABLE (threat text, object text, holder text, fix text)
LANGUAGE sql STABLE
AS $$
    -- The cheap half, checked on every SECURITY DEFINER call: who may CREATE in public.
    -- An untrusted holder of CREATE (PUBLIC, a login role, a group an untrusted role may act
    -- as) could plant an overload at any moment. The schema's owner holds CREATE implicitly:
    -- a NULL ACL means the default one (owner only). Inlinable like fn_iu_untrusted_roles.
    SELECT 'create_on_schema'::text, 'schema public'::text,
           CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::pg_catalog.regrole::text END,
           CASE WHEN a.grantee = n.nspowner
                THEN pg_catalog.format('ALTER SCHEMA public OWNER TO %s;', public.fn_iu_package_owner()::pg_catalog.regrole)
                ELSE pg_catalog.format('REVOKE CREATE ON SCHEMA public FROM %s;',
                                       CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::pg_catalog.regrole::text END) END
      FROM pg_catalog.pg_namespace n
     CROSS JOIN LATERAL pg_catalog.aclexplode(coalesce(n.nspacl, pg_catalog.acldefault('n', n.nspowner))) a
     WHERE n.nspname = 'public'
       AND a.privilege_type = 'CREATE'
       AND EXISTS (SELECT 1 FROM public.fn_iu_untrusted_roles(ARRAY[a.grantee]))
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_search_path_threats()
RETURNS TABLE (threat text, object text, holder text, fix text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- The full scan (install and the runtime verification W10): who may CREATE in public,
    -- and which functions and operators in public belong to an untrusted role (an overload
    -- planted while the schema was open stays dangerous after CREATE is revoked).
    SELECT * FROM public.fn_iu_search_path_create_threats()
    UNION ALL
    SELECT 'function', p.oid::pg_catalog.regprocedure::text, p.proowner::pg_catalog.regrole::text,
           pg_catalog.format('DROP %s %s;', CASE p.prokind WHEN 'a' THEN 'AGGREGATE' WHEN 'p' THEN 'PROCEDURE' ELSE 'FUNCTION' END,
                             p.oid::pg_catalog.regprocedure)
      FROM pg_catalog.pg_proc p
     WHERE p.pronamespace = 'public'::pg_catalog.regnamespace
       AND EXISTS (SELECT 1 FROM public.fn_iu_untrusted_roles(ARRAY[p.proowner]))
    UNION ALL
    SELECT 'operator', o.oid::pg_catalog.regoperator::text, o.oprowner::pg_catalog.regrole::text,
           pg_catalog.format('DROP OPERATOR %s;', o.oid::pg_catalog.regoperator)
      FROM pg_catalog.pg_operator o
     WHERE o.oprnamespace = 'public'::pg_catalog.regnamespace
       AND EXISTS (SELECT 1 FROM public.fn_iu_untrusted_roles(ARRAY[o.oprowner]))
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_require_trusted_search_path(p_caller text, p_full boolean DEFAULT false)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- The guard: the first statement of every SECURITY DEFINER function of the package
    -- (p_full false: the ACL of public only, a few catalog probes per call) and of the
    -- install (p_full true: also every function and operator in public). Returns true, or
    -- raises 42501 naming the threats, with the statements that remove them in the HINT.
    -- Runs with search_path = pg_catalog only, so nothing it calls can be hijacked, and the
    -- inlined threat query is planned once per session (plpgsql caches it).
DECLARE
    v_what text;
    v_fix  text;
BEGIN
    -- The common answer first, as one existence probe (no aggregate, no text built); the
    -- threats are only described when there are some.
    IF NOT p_full AND NOT EXISTS (SELECT 1 FROM public.fn_iu_search_path_create_threats()) THEN
        RETURN true;
    END IF;
    IF p_full THEN
        SELECT pg_catalog.string_agg(pg_catalog.format('%s %s (%s)', t.threat, t.object, t.holder), '; '),
               pg_catalog.string_agg(t.fix, ' ')
          INTO v_what, v_fix FROM public.fn_iu_search_path_threats() t;
    ELSE
        SELECT pg_catalog.string_agg(pg_catalog.format('%s %s (%s)', t.threat, t.object, t.holder), '; '),
               pg_catalog.string_agg(t.fix, ' ')
          INTO v_what, v_fix FROM public.fn_iu_search_path_create_threats() t;
    END IF;
    IF v_what IS NOT NULL THEN
        RAISE EXCEPTION '%: refused: an untrusted role can plant functions or operators on the package''s search_path: %',
            p_caller, v_what
            USING ERRCODE = '42501',
                  HINT = 'A superuser runs: ' || v_fix || ' Only superusers, the package owner and its members may create in schema public.';
    END IF;
    RETURN true;
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION fn_iu_package_owner() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_untrusted_roles(oid[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_search_path_create_threats() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_search_path_threats() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_require_trusted_search_path(text, boolean) FROM PUBLIC;

-- Refuse to install while a threat exists (an overload planted before the install would
-- otherwise be called by the very first run).
SELECT fn_iu_require_trusted_search_path('iu-core install (001_event_outbox)', true);

-- +goose StatementBegin
CREATE FUNCTION fn_iu_payload_is_clean(p_payload jsonb)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- Payload hygiene, the whole rule: a payload is clean when it is NULL (the caller
    -- decides what NULL means), or when it
    --   1. is at most 65,536 bytes as text (jsonb's own text form) and nests at most 32
    --      levels (no value inside 33 containers: `$.**{33}` finds nothing). Payloads are
    --      signals, never data. The bounds come first: the size is the text's length, and
    --      the depth test stops at level 33 however deep the value goes (~4k and ~5k
    --      instructions on a small payload). pg_column_size would read the size from the
    --      datum's header, but it is STABLE, and a STABLE call stops this IMMUTABLE function
    --      from being inlined: that cost every insert ~350k instructions;
    --   2. carries no denylisted key (body, content, raw, vector, embedding, secret, token,
    --      password, ssn, personal_data), at any depth, in any letter case. The test reads
    --      the payload's text once, linearly, and builds nothing per level (a jsonpath
    --      `.keyvalue()` walk copies every subtree once per level above it: its memory grew
    --      with the square of the depth and one 60 kB payload took a backend to 24 GB).
    --      jsonb prints a key as "key": right after `{` or `, `, and every quote inside a
    --      string as \", so `{"token": ` or ` "token": ` in the lowercased text is a key
    --      named token, and a key is never missed. The LIKE prefilter ("token": anywhere, `_`
    --      escaped so personal-data is not mistaken for personal_data) settles the common,
    --      clean case; the exact pattern runs only when the prefilter matched (a denied key,
    --      or a key or string quoting one). lower() folds at least every case variant a
    --      case-insensitive match accepts, so the test only ever refuses more.
    --
    -- The limits are restated in fn_iu_payload_refusal (which explains a refusal); the
    -- boundary tests hold both to them.
    --
    -- Everything is pg_catalog-qualified and nothing but built-ins is called, on purpose.
    -- This function is inlined into the CHECKs that call it (the outbox's payload domain,
    -- other tables' CHECKs) and into callers' queries (no SET search_path, which would stop
    -- the inlining and cost a function call per row), and an inlined body is resolved in
    -- the CALLER's search_path: an unqualified operator could pick one a producer created in
    -- its own schema and switch hygiene off. A producer that INSERTs directly needs EXECUTE
    -- on this function only, not on helpers it would call.
    SELECT p_payload IS NULL
        OR (pg_catalog.octet_length(CAST(p_payload AS pg_catalog.text)) OPERATOR(pg_catalog.<=) 65536
            AND NOT p_payload OPERATOR(pg_catalog.@?) CAST('$.**{33}' AS pg_catalog.jsonpath)
            AND NOT (pg_catalog.lower(CAST(p_payload AS pg_catalog.text)) OPERATOR(pg_catalog.~~) ANY (ARRAY[
                         '%"body": %', '%"content": %', '%"raw": %', '%"vector": %', '%"embedding": %',
                         '%"secret": %', '%"token": %', '%"password": %', '%"ssn": %', '%"personal\_data": %']::pg_catalog.text[])
                     AND pg_catalog.lower(CAST(p_payload AS pg_catalog.text)) OPERATOR(pg_catalog.~)
                         '[{ ]"(body|content|raw|vector|embedding|secret|token|password|ssn|personal_data)": '::pg_catalog.text))
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_payload_denied_paths(p_payload jsonb)
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- The slow, explanatory twin of fn_iu_payload_is_clean: used only to build error
    -- messages, so an operator sees where the offending key sits ($.a[2].token).
    WITH RECURSIVE walk(path, value) AS (
        SELECT '$'::text, p_payload
        UNION ALL
        SELECT w.path || CASE WHEN jsonb_typeof(w.value) = 'object' THEN '.' || e.key ELSE '[' || e.key || ']' END,
               e.value
          FROM walk w
          CROSS JOIN LATERAL (
                SELECT o.key, o.value FROM jsonb_each(CASE WHEN jsonb_typeof(w.value) = 'object' THEN w.value END) o
                UNION ALL
                SELECT (a.ord - 1)::text, a.value
                  FROM jsonb_array_elements(CASE WHEN jsonb_typeof(w.value) = 'array' THEN w.value END)
                       WITH ORDINALITY a(value, ord)
          ) e
    )
    SELECT coalesce(array_agg(path ORDER BY path), '{}')
      FROM walk
     WHERE path <> '$'
       AND lower(regexp_replace(path, '^.*[.]', '')) IN ('body','content','raw','vector','embedding',
                                                          'secret','token','password','ssn','personal_data')
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_payload_refusal(p_payload jsonb)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- Why fn_iu_payload_is_clean refuses p_payload, in words (NULL when it does not): the
    -- size, the depth, or where the denylisted keys sit ($.a[2].token). The limits are the
    -- rule's (65,536 bytes, 32 levels), tested in that order, so the key walk below only
    -- ever runs on a bounded value: it copies subtrees (fine for 64 kB x 32 levels, not
    -- for a 60 kB value 10,000 levels deep).
    SELECT CASE
        WHEN p_payload IS NULL OR fn_iu_payload_is_clean(p_payload) THEN NULL
        WHEN octet_length(p_payload::text) > 65536 THEN
            format('is %s bytes as text, at most 65536 allowed', octet_length(p_payload::text))
        WHEN p_payload @? '$.**{33}' THEN
            'nests deeper than 32 levels'
        ELSE 'carries denylisted keys at ' || array_to_string(fn_iu_payload_denied_paths(p_payload), ', ')
    END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_payload_require_clean(p_caller text, p_param text, p_payload jsonb)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
    -- The one argument check every writer of a stored or signalled payload calls, so the
    -- refusal reads the same everywhere: "<function>: <parameter> ...", SQLSTATE 22023.
    IF p_payload IS NULL OR jsonb_typeof(p_payload) <> 'object' THEN
        RAISE EXCEPTION '%: % must be a JSON object', p_caller, p_param USING ERRCODE = '22023';
    END IF;
    IF NOT fn_iu_payload_is_clean(p_payload) THEN
        RAISE EXCEPTION '%: % %', p_caller, p_param, fn_iu_payload_refusal(p_payload)
            USING ERRCODE = '22023',
                  HINT = 'Payloads are signals, never data: at most 65536 bytes, at most 32 levels deep, and never a key named body, content, raw, vector, embedding, secret, token, password, ssn or personal_data (in any letter case, at any depth).';
    END IF;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_is_whitespace(p_value text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- The text half of "blank": empty, or only spaces, tabs, newlines, carriage returns, form
    -- or vertical feeds; NULL for NULL (the caller decides what NULL means). Used alone where
    -- a NULL must not count as blank or where a NULL result already fails the test (emit's
    -- accepting path: one comparison fewer per argument, prepared on every call). Inlined,
    -- so everything is pg_catalog-qualified (see fn_iu_payload_is_clean).
    SELECT pg_catalog.btrim(p_value, E' \t\r\n\f\x0B') OPERATOR(pg_catalog.=) ''::pg_catalog.text
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_is_blank(p_value text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- What "blank" means everywhere in the package (argument checks and table CHECKs):
    -- NULL, or whitespace only (fn_iu_is_whitespace: empty, or only spaces, tabs, newlines,
    -- carriage returns, form or vertical feeds).
    SELECT p_value IS NULL OR public.fn_iu_is_whitespace(p_value)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_require_name(p_caller text, p_param text, p_value text, p_max_bytes integer DEFAULT 200)
RETURNS void
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE
AS $$
BEGIN
    -- The one argument check for every name, id and key a caller hands the package (worker
    -- names, executor ids, route keys, job kinds, dedupe keys...). Blank is the same as
    -- empty: a name of spaces cannot be told apart in a psql listing. The byte bound keeps
    -- every index that holds the value (and the idempotency key built from it) far below
    -- btree's ~2.7 kB row limit, so a long name is refused here with 22023 instead of
    -- registering and then failing every later run with 54000.
    IF fn_iu_is_blank(p_value) THEN
        RAISE EXCEPTION '%: % required', p_caller, p_param
            USING ERRCODE = '22023', HINT = 'Pass a non-blank name.';
    END IF;
    IF octet_length(p_value) > p_max_bytes THEN
        RAISE EXCEPTION '%: % is % bytes long, at most % allowed', p_caller, p_param,
            octet_length(p_value), p_max_bytes
            USING ERRCODE = '22023', HINT = 'Use a shorter name.';
    END IF;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_event_outbox_package_only(p_event_type text)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- The refusing half of two row rules, called by the outbox's domains only on the branch
    -- where the row breaks the rule for anyone but the package. Whether the writer is the
    -- package: a member of the package owner (as fn_queue_stale_check is when it writes its
    -- alerts and the partition maintenance when it writes partition bounds; superusers are
    -- members of every role). p_event_type: the reserved type being written (iu_event_type):
    -- true for the package, 42501 for anyone else; NULL (iu_txid, a txid that is not the
    -- inserter's): true or false, so the domain refuses with its own constraint (23514). queue_worker_silent and
    -- queue_worker_recovered are the package's own alerts; a producer with INSERT on
    -- event_outbox must not forge them: a fake "silent" or "recovered" would mislead the
    -- people paged by them. The owner is read from the catalog (this function's own owner).
    -- The domain's check runs in the writer's rights, and PostgreSQL checks EXECUTE on every
    -- function of a check when a statement starts, even one the row never reaches: a
    -- producer that INSERTs directly is granted EXECUTE on it (as on fn_iu_payload_is_clean).
    IF pg_catalog.pg_has_role(current_user,
                              (SELECT p.proowner FROM pg_catalog.pg_proc p
                                WHERE p.oid = 'public.fn_iu_event_outbox_package_only(text)'::pg_catalog.regprocedure),
                              'MEMBER') THEN
        RETURN true;
    END IF;
    IF p_event_type IS NULL THEN
        RETURN false;
    END IF;
    RAISE EXCEPTION 'fn_iu_event_outbox_package_only: % events are written only by the package (fn_queue_stale_check)', p_event_type
        USING ERRCODE = '42501',
              HINT = 'queue_worker_silent and queue_worker_recovered are reserved event types in every domain; register your own type for your own alerts (executor silence is reported by fn_queue_stale_check).';
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_event_outbox_refuse_payload(p_payload jsonb)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = public, pg_temp
AS $$
BEGIN
    -- The refusing half of the payload hygiene rule, called by the outbox's payload domain
    -- only for a payload that breaks it. p_payload: that payload. Returns false, so the
    -- domain refuses the row with its own constraint (23514, event_outbox_safe_payload_hygiene),
    -- which is what a producer INSERTing directly gets; touches nothing.
    --
    -- Inside fn_iu_emit_event it raises that function's own error instead (22023,
    -- "fn_iu_emit_event: p_safe_payload carries denylisted keys at <paths>"). This is what
    -- lets emit leave the hygiene test to the domain alone: the test is the most expensive
    -- of the row rules, and PostgreSQL prepares every function of a statement on every
    -- call, so testing it in emit's statement as well cost every emit the rule twice. The
    -- sign that the writer is fn_iu_emit_event is the setting iu.emit_event = 'on', which
    -- that function sets for its own execution only (a SET clause of its definition). A
    -- caller who sets it by hand changes nothing but the wording and SQLSTATE of their own
    -- refusal: the row is refused either way.
    --
    -- It runs inside emit's rights and search_path (public, pg_temp), so the writable-schema
    -- guard comes first, as on emit's other refusing paths (called exactly typed).
    IF pg_catalog.current_setting('iu.emit_event'::pg_catalog.text, true) OPERATOR(pg_catalog.=) 'on'::pg_catalog.text THEN
        PERFORM public.fn_iu_require_trusted_search_path('fn_iu_emit_event'::pg_catalog.text, false);
        PERFORM public.fn_iu_payload_require_clean('fn_iu_emit_event'::pg_catalog.text,
                                                   'p_safe_payload'::pg_catalog.text, p_payload);
    END IF;
    RETURN false;
END;
$$;
-- +goose StatementEnd

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
CREATE DOMAIN iu_event_name AS text
    CONSTRAINT iu_event_name_not_empty CHECK (VALUE <> '');
-- An event type: a name, and the stale-check's two alert types are reserved for the
-- package in every domain (the package writes them in domain system). The rule sits on the
-- type alone because a domain sees one column; it costs a single comparison per row, where
-- the row trigger that tested domain and type together cost a single-row INSERT about a
-- sixth of its instructions (its WHEN re-read for every statement, and a row trigger makes
-- PostgreSQL re-check the partition bounds of every routed row).
CREATE DOMAIN iu_event_type AS iu_event_name
    CONSTRAINT event_outbox_package_only CHECK (
        VALUE OPERATOR(pg_catalog.<>) ALL ('{queue_worker_silent,queue_worker_recovered}'::pg_catalog.text[])
        OR public.fn_iu_event_outbox_package_only(VALUE));
CREATE DOMAIN iu_delivery_lane AS text
    CONSTRAINT iu_delivery_lane_valid CHECK (VALUE IN ('immediate', 'standard', 'batch'));
CREATE DOMAIN iu_event_severity AS text
    CONSTRAINT iu_event_severity_valid CHECK (VALUE IN ('debug', 'info', 'warning', 'critical'));
-- The hygiene constraint's refusing branch (fn_iu_event_outbox_refuse_payload) runs only for
-- a payload that breaks it: it refuses with the constraint, or inside fn_iu_emit_event with
-- that function's own error, so emit does not test hygiene a second time.
CREATE DOMAIN iu_safe_payload AS jsonb
    CONSTRAINT event_outbox_safe_payload_object CHECK (jsonb_typeof(VALUE) = 'object')
    CONSTRAINT event_outbox_safe_payload_hygiene CHECK (
        fn_iu_payload_is_clean(VALUE) OR public.fn_iu_event_outbox_refuse_payload(VALUE));
-- The inserting top-level transaction's id (its rule is added NOT VALID below the table).
CREATE DOMAIN iu_txid AS xid8;

CREATE TABLE event_outbox (
    id                  uuid              PRIMARY KEY DEFAULT gen_random_uuid(),
    event_domain        iu_event_name     NOT NULL,
    event_type          iu_event_type     NOT NULL,
    event_stream        iu_event_name     NOT NULL,
    delivery_lane       iu_delivery_lane  NOT NULL DEFAULT 'standard',
    event_severity      iu_event_severity NOT NULL DEFAULT 'info',
    event_subject_table text,
    event_subject_ref   text,
    safe_payload        iu_safe_payload   NOT NULL DEFAULT '{}'::jsonb,
    occurred_at         timestamptz       NOT NULL DEFAULT now(),
    created_at          timestamptz       NOT NULL DEFAULT now(),
    -- The inserting top-level transaction (pg_current_xact_id() is never a subxact id).
    txid                iu_txid           NOT NULL DEFAULT pg_current_xact_id()
);

-- The stored txid is always the inserting transaction's. A producer with INSERT could
-- otherwise pass its own: a past value hides the event from every consumer (it sorts before
-- their position and the backlog reads 0), a future one halts a whole domain. The rule is a
-- constraint of the column's domain rather than a table CHECK for the producers' insert rate
-- (a table CHECK is re-read from its stored text for every INSERT statement, see above).
-- Only the package may store another value (the refusing branch asks
-- fn_iu_event_outbox_package_only): the txid is the partition key (017), and PostgreSQL
-- checks every partition bound the package's maintenance writes against the key's domain.
-- It is added NOT VALID on purpose: pg_dump then writes it after the data, so a restore
-- loads the old rows (carrying the source cluster's txids) unchecked;
-- fn_iu_event_outbox_rebase_foreign_txids re-stamps them with its own transaction id.
-- Copying rows between tables of this column type (SELECT * into another outbox table) does
-- not re-check them: a value already of the domain is not coerced again.
ALTER DOMAIN iu_txid ADD CONSTRAINT event_outbox_txid_is_inserter
    CHECK (VALUE OPERATOR(pg_catalog.=) pg_catalog.pg_current_xact_id()
           OR public.fn_iu_event_outbox_package_only(NULL::pg_catalog.text)) NOT VALID;

COMMENT ON TABLE event_outbox IS
    'Shared append-only event log. UPDATE, DELETE and TRUNCATE are rejected. Consumers keep their own cursor.';
COMMENT ON COLUMN event_outbox.txid IS
    'Top-level transaction that inserted the row; consumers batch by snapshot difference over it.';

-- The consumers' claim index: one domain, a txid range, paged by (txid, id).
CREATE INDEX event_outbox_domain_txid_idx ON event_outbox (event_domain, txid, id);

-- +goose StatementBegin
CREATE FUNCTION fn_iu_event_outbox_append_only()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    -- The one sanctioned change: fn_iu_event_outbox_rebase_foreign_txids (009) re-stamps the
    -- txid bookkeeping column of rows restored from another cluster. It sets this flag for
    -- its own transaction only, and nothing but txid may differ.
    IF TG_OP = 'UPDATE' AND current_setting('iu.rebase_txid', true) = 'on'
       AND (to_jsonb(NEW) - 'txid') = (to_jsonb(OLD) - 'txid') THEN
        RETURN NEW;
    END IF;
    -- Its row-moving half: event_outbox is partitioned by txid (017), so re-stamping a row's
    -- txid moves it to another partition, which PostgreSQL performs as a DELETE from the old
    -- partition (firing BEFORE UPDATE, checked above, then BEFORE DELETE there) plus an
    -- INSERT. Allowed only inside a rebase, and only for a row whose txid lies ahead of this
    -- cluster (the only rows a rebase touches).
    IF TG_OP = 'DELETE' AND current_setting('iu.rebase_txid', true) = 'on'
       AND OLD.txid >= pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot()) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'fn_iu_event_outbox_append_only: event_outbox is append-only: % rejected', TG_OP
        USING ERRCODE = 'IU001',
              HINT = 'Emit a new event (fn_iu_emit_event) instead of changing or removing one.';
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER trg_event_outbox_append_only
    BEFORE UPDATE OR DELETE ON event_outbox
    FOR EACH ROW EXECUTE FUNCTION fn_iu_event_outbox_append_only();
CREATE TRIGGER trg_event_outbox_no_truncate
    BEFORE TRUNCATE ON event_outbox
    FOR EACH STATEMENT EXECUTE FUNCTION fn_iu_event_outbox_append_only();

REVOKE ALL ON FUNCTION fn_iu_payload_is_clean(jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_payload_denied_paths(jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_payload_refusal(jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_payload_require_clean(text, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_event_outbox_append_only() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_event_outbox_package_only(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_event_outbox_refuse_payload(jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_require_name(text, text, text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_is_blank(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_is_whitespace(text) FROM PUBLIC;

-- +goose Down
DROP TABLE event_outbox;
DROP DOMAIN iu_txid;
DROP DOMAIN iu_safe_payload;
DROP DOMAIN iu_event_severity;
DROP DOMAIN iu_delivery_lane;
DROP DOMAIN iu_event_type;
DROP DOMAIN iu_event_name;
DROP FUNCTION fn_iu_event_outbox_append_only();
DROP FUNCTION fn_iu_event_outbox_package_only(text);
DROP FUNCTION fn_iu_event_outbox_refuse_payload(jsonb);
DROP FUNCTION fn_iu_require_name(text, text, text, integer);
DROP FUNCTION fn_iu_is_blank(text);
DROP FUNCTION fn_iu_is_whitespace(text);
DROP FUNCTION fn_iu_payload_require_clean(text, text, jsonb);
DROP FUNCTION fn_iu_payload_refusal(jsonb);
DROP FUNCTION fn_iu_payload_denied_paths(jsonb);
DROP FUNCTION fn_iu_payload_is_clean(jsonb);
DROP FUNCTION fn_iu_require_trusted_search_path(text, boolean);
DROP FUNCTION fn_iu_search_path_threats();
DROP FUNCTION fn_iu_search_path_create_threats();
DROP FUNCTION fn_iu_untrusted_roles(oid[]);
DROP FUNCTION fn_iu_package_owner();
