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

-- +goose StatementBegin
CREATE FUNCTION fn_iu_payload_is_clean(p_payload jsonb)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- `.**` visits every level (objects and array elements); in lax mode a member
    -- accessor on an array looks inside its elements, so a key anywhere is found.
    SELECT p_payload IS NULL OR NOT (p_payload @? '$.** ? (exists(@."body") || exists(@."content")
        || exists(@."raw") || exists(@."vector") || exists(@."embedding") || exists(@."secret")
        || exists(@."token") || exists(@."password") || exists(@."ssn") || exists(@."personal_data"))')
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
       AND regexp_replace(path, '^.*[.]', '') IN ('body','content','raw','vector','embedding',
                                                   'secret','token','password','ssn','personal_data')
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
        RAISE EXCEPTION '%: % carries denylisted keys at %', p_caller, p_param,
            array_to_string(fn_iu_payload_denied_paths(p_payload), ', ')
            USING ERRCODE = '22023',
                  HINT = 'Payloads are signals, never data: body, content, raw, vector, embedding, secret, token, password, ssn and personal_data are refused at any depth.';
    END IF;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_is_blank(p_value text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- What "blank" means everywhere in the package (argument checks and table CHECKs):
    -- NULL, empty, or only spaces, tabs, newlines, carriage returns, form or vertical feeds.
    SELECT p_value IS NULL OR pg_catalog.btrim(p_value, E' \t\r\n\f\x0B') OPERATOR(pg_catalog.=) ''
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

CREATE TABLE event_outbox (
    id                  uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    event_domain        text        NOT NULL CHECK (event_domain <> ''),
    event_type          text        NOT NULL CHECK (event_type <> ''),
    event_stream        text        NOT NULL CHECK (event_stream <> ''),
    delivery_lane       text        NOT NULL DEFAULT 'standard'
                        CHECK (delivery_lane IN ('immediate', 'standard', 'batch')),
    event_severity      text        NOT NULL DEFAULT 'info'
                        CHECK (event_severity IN ('debug', 'info', 'warning', 'critical')),
    event_subject_table text,
    event_subject_ref   text,
    safe_payload        jsonb       NOT NULL DEFAULT '{}'::jsonb,
    occurred_at         timestamptz NOT NULL DEFAULT now(),
    created_at          timestamptz NOT NULL DEFAULT now(),
    -- The inserting top-level transaction (pg_current_xact_id() is never a subxact id).
    txid                xid8        NOT NULL DEFAULT pg_current_xact_id(),
    CONSTRAINT event_outbox_safe_payload_object CHECK (jsonb_typeof(safe_payload) = 'object'),
    CONSTRAINT event_outbox_safe_payload_hygiene CHECK (fn_iu_payload_is_clean(safe_payload))
);

COMMENT ON TABLE event_outbox IS
    'Shared append-only event log. UPDATE, DELETE and TRUNCATE are rejected. Consumers keep their own cursor.';
COMMENT ON COLUMN event_outbox.txid IS
    'Top-level transaction that inserted the row; consumers batch by snapshot difference over it.';

-- The consumers' claim index: one domain, a txid range, paged by (txid, id).
CREATE INDEX event_outbox_domain_txid_idx ON event_outbox (event_domain, txid, id);
-- The stale-check's "no silent alert for this executor in the last 2 x threshold" lookup.
-- Partial on the alert type, so the insert path of every other event pays nothing for it.
CREATE INDEX event_outbox_alert_subject_idx ON event_outbox (event_subject_ref, created_at)
    WHERE event_domain = 'system' AND event_type = 'queue_worker_silent';

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
REVOKE ALL ON FUNCTION fn_iu_payload_require_clean(text, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_event_outbox_append_only() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_require_name(text, text, text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_is_blank(text) FROM PUBLIC;

-- +goose Down
DROP TABLE event_outbox;
DROP FUNCTION fn_iu_event_outbox_append_only();
DROP FUNCTION fn_iu_require_name(text, text, text, integer);
DROP FUNCTION fn_iu_is_blank(text);
DROP FUNCTION fn_iu_payload_require_clean(text, text, jsonb);
DROP FUNCTION fn_iu_payload_denied_paths(jsonb);
DROP FUNCTION fn_iu_payload_is_clean(jsonb);
