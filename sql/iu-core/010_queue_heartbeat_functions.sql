-- 010_queue_heartbeat_functions.sql
--
-- Adds the heartbeat surface over queue_heartbeat (the table itself comes from 008):
--   fn_queue_heartbeat_register   workflow_admin: one-time, idempotent registration
--   fn_queue_heartbeat_write      dot_executor:   a beat of a registered executor
--   fn_queue_heartbeat_tick       dot_executor:   the permissive primitive (generic UPSERT)
--   fn_queue_heartbeat_pause      workflow_admin: planned maintenance, no alerts
--   fn_queue_heartbeat_resume     workflow_admin: back on duty, the clock restarts
-- and the dot_config keys the heartbeat layer reads:
--   queue.heartbeat.enabled                  'true'  ping gate (fn_cut_heartbeat_ping, 011)
--   queue.heartbeat.stale_threshold_seconds  '60'    global floor over every executor's own
--                                                    threshold (set it huge: stale-check inert;
--                                                    any digit count, clamped to 2147483647;
--                                                    parsed only by fn_queue_heartbeat_floor_seconds)
--   queue.heartbeat.protected_executors      ''      extra protected executor ids (comma or
--                                                    whitespace separated) that the ping
--                                                    wrapper refuses; iu_outbound_default is
--                                                    always protected
--
-- Why: an executor that beats on every tick, work or no work, makes "alive and idle"
-- observable and different from "silently dead" (seed DP4). Each beat records who wrote it
-- (last_beat_by, added here); alerted_beat_at (added here, written by the stale-check in 012)
-- remembers which beat an open alert was about, so only a real new beat counts as recovery.
--
-- Defaults of the primitive fn_queue_heartbeat_tick for an executor it has never seen:
-- expected cadence 60 s, stale threshold 180 s (three missed beats). Register the executor
-- (fn_queue_heartbeat_register) to set its own values.

-- +goose Up

ALTER TABLE queue_heartbeat ADD COLUMN last_beat_by text;
ALTER TABLE queue_heartbeat ADD COLUMN alerted_beat_at timestamptz;
COMMENT ON COLUMN queue_heartbeat.last_beat_by IS 'Actor of the last beat (p_actor, app.actor or the session user).';
COMMENT ON COLUMN queue_heartbeat.alerted_beat_at IS
    'Stale-check bookkeeping: last_beat_at as it was when the open silence was alerted; a later beat is a recovery.';

INSERT INTO dot_config (key, value, description) VALUES
    ('queue.heartbeat.enabled', 'true',
     'Heartbeat ping gate (fn_cut_heartbeat_ping). Only ''true'' opens it; otherwise pings return {"skipped": true}.'),
    ('queue.heartbeat.stale_threshold_seconds', '60',
     'Global floor (seconds) over every executor''s own stale threshold. Any non-negative integer (clamped to 2147483647); a missing or non-integer value means no floor. Set it huge to make fn_queue_stale_check inert.'),
    ('queue.heartbeat.protected_executors', '',
     'Executor ids (comma or whitespace separated) fn_cut_heartbeat_ping refuses to tick, on top of iu_outbound_default, which is always protected.')
ON CONFLICT (key) DO NOTHING;


-- +goose StatementBegin
CREATE FUNCTION fn_queue_heartbeat_floor_seconds()
RETURNS integer
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
    -- The global floor, parsed in this one place (the stale-check in 012 and v_queue_health
    -- in 015 both call it). Any non-negative integer, surrounding whitespace ignored, is the
    -- floor in seconds, clamped to 2147483647 (the largest integer): "set it huge and the
    -- stale-check is inert" holds for any number of digits. A missing, empty or non-integer
    -- value ('abc', '-5', '1e3', '1.5') means no floor (0), so every executor's own threshold
    -- still applies; the floor can only make alerts rarer. SECURITY DEFINER: readers of
    -- v_queue_health (workflow_admin) need not read dot_config themselves.
    SELECT coalesce((
        SELECT CASE WHEN length(v.digits) > 10 THEN 2147483647
                    ELSE least(v.digits::bigint, 2147483647)::integer END
          FROM dot_config c
         CROSS JOIN LATERAL (
               SELECT coalesce(nullif(ltrim(regexp_replace(c.value, '^[[:space:]]+|[[:space:]]+$', '', 'g'), '0'), ''), '0')
               ) AS v(digits)
         WHERE c.key = 'queue.heartbeat.stale_threshold_seconds'
           AND c.value ~ '^[[:space:]]*[0-9]+[[:space:]]*$'), 0)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_queue_heartbeat_is_protected(p_executor_id text)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = public, pg_temp
AS $$
    SELECT p_executor_id = 'iu_outbound_default'
        OR EXISTS (SELECT 1 FROM dot_config c
                    CROSS JOIN LATERAL regexp_split_to_table(c.value, '[\s,]+') AS x(id)
                    WHERE c.key = 'queue.heartbeat.protected_executors'
                      AND x.id <> '' AND x.id = p_executor_id)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_queue_heartbeat_register(
    p_executor_id              text,
    p_kind                     text,
    p_domain_scope             text[],
    p_expected_cadence_seconds integer,
    p_stale_threshold_seconds  integer,
    p_actor                    text DEFAULT NULL
)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_row     queue_heartbeat;
    v_id      text;
    v_created boolean;
    v_actor   text := fn_queue_actor(p_actor);
BEGIN
    IF coalesce(btrim(p_executor_id), '') = '' THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_register: p_executor_id required' USING ERRCODE = '22023';
    END IF;
    IF p_kind IS NULL OR NOT p_kind = ANY (fn_queue_executor_kinds()) THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_register: p_kind % is not one of %',
            coalesce(quote_literal(p_kind), 'NULL'), array_to_string(fn_queue_executor_kinds(), ', ') USING ERRCODE = '22023';
    END IF;
    IF p_domain_scope IS NULL OR array_position(p_domain_scope, NULL) IS NOT NULL OR '' = ANY (p_domain_scope) THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_register: p_domain_scope must be an array of non-empty domains (it may be empty: ''{}'')'
            USING ERRCODE = '22023';
    END IF;
    IF p_expected_cadence_seconds IS NULL OR p_expected_cadence_seconds <= 0 THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_register: p_expected_cadence_seconds must be > 0, got %',
            coalesce(p_expected_cadence_seconds::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF p_stale_threshold_seconds IS NULL OR p_stale_threshold_seconds <= 0 THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_register: p_stale_threshold_seconds must be > 0, got %',
            coalesce(p_stale_threshold_seconds::text, 'NULL') USING ERRCODE = '22023',
            HINT = 'A threshold of about three times the expected cadence tolerates two missed beats.';
    END IF;

    -- Idempotent: a second registration with the same values changes nothing; different
    -- values update the executor's configuration (never its beat history).
    INSERT INTO queue_heartbeat AS h (executor_id, executor_kind, domain_scope, expected_cadence_seconds,
                                      stale_threshold_seconds, registered_by, last_beat_by)
    VALUES (p_executor_id, p_kind, p_domain_scope, p_expected_cadence_seconds, p_stale_threshold_seconds,
            v_actor, v_actor)
    ON CONFLICT (executor_id) DO UPDATE
       SET executor_kind            = EXCLUDED.executor_kind,
           domain_scope             = EXCLUDED.domain_scope,
           expected_cadence_seconds = EXCLUDED.expected_cadence_seconds,
           stale_threshold_seconds  = EXCLUDED.stale_threshold_seconds
     WHERE (h.executor_kind, h.domain_scope, h.expected_cadence_seconds, h.stale_threshold_seconds)
           IS DISTINCT FROM (EXCLUDED.executor_kind, EXCLUDED.domain_scope, EXCLUDED.expected_cadence_seconds,
                             EXCLUDED.stale_threshold_seconds)
    RETURNING h.executor_id, (h.xmax = 0) INTO v_id, v_created;

    SELECT * INTO v_row FROM queue_heartbeat WHERE executor_id = p_executor_id;
    IF v_id IS NULL THEN
        RETURN jsonb_build_object('executor_id', v_row.executor_id, 'registered', true, 'created', false,
                                  'changed', false) || fn_queue_heartbeat_describe(v_row);
    END IF;
    RETURN jsonb_build_object('executor_id', v_row.executor_id, 'registered', true, 'created', v_created,
                              'changed', NOT v_created) || fn_queue_heartbeat_describe(v_row);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_queue_heartbeat_describe(p_row queue_heartbeat)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = public, pg_temp
AS $$
    SELECT jsonb_build_object(
        'executor_kind',            p_row.executor_kind,
        'domain_scope',             to_jsonb(p_row.domain_scope),
        'status',                   p_row.status,
        'expected_cadence_seconds', p_row.expected_cadence_seconds,
        'stale_threshold_seconds',  p_row.stale_threshold_seconds,
        'ticks_total',              p_row.ticks_total,
        'last_beat_at',             p_row.last_beat_at,
        'registered_at',            p_row.registered_at,
        'registered_by',            p_row.registered_by,
        'paused',                   p_row.paused_at IS NOT NULL)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_queue_heartbeat_write(p_executor_id text, p_payload jsonb DEFAULT '{}'::jsonb, p_actor text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_row     queue_heartbeat;
    v_payload jsonb := coalesce(p_payload, '{}'::jsonb);
BEGIN
    IF coalesce(btrim(p_executor_id), '') = '' THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_write: p_executor_id required' USING ERRCODE = '22023';
    END IF;
    PERFORM fn_iu_payload_require_clean('fn_queue_heartbeat_write', 'p_payload', v_payload);

    UPDATE queue_heartbeat
       SET last_beat_at      = now(),
           last_beat_payload = v_payload,
           last_beat_by      = fn_queue_actor(p_actor),
           ticks_total       = ticks_total + 1
     WHERE executor_id = p_executor_id
    RETURNING * INTO v_row;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_write: executor % is not registered', quote_literal(p_executor_id)
            USING ERRCODE = 'P0002',
                  HINT = format('An operator registers it once: SELECT fn_queue_heartbeat_register(%L, ''external_worker'', ''{}'', 60, 180, ''me'');', p_executor_id);
    END IF;
    RETURN jsonb_build_object('executor_id', v_row.executor_id, 'beat', true) || fn_queue_heartbeat_describe(v_row);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_queue_heartbeat_tick(
    p_executor_name text,
    p_executor_kind text,
    p_status        text  DEFAULT 'ok',
    p_metadata      jsonb DEFAULT '{}'::jsonb
)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- The permissive primitive: a generic UPSERT. An unknown executor is registered with the
-- documented defaults (cadence 60 s, threshold 180 s); a known one keeps its registered kind
-- and timings, and gets the beat, the status and the metadata.
DECLARE
    v_row      queue_heartbeat;
    v_id       text;
    v_created  boolean;
    v_metadata jsonb := coalesce(p_metadata, '{}'::jsonb);
    v_actor    text := fn_queue_actor(NULL);
BEGIN
    IF coalesce(btrim(p_executor_name), '') = '' THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_tick: p_executor_name required' USING ERRCODE = '22023';
    END IF;
    IF p_executor_kind IS NULL OR NOT p_executor_kind = ANY (fn_queue_executor_kinds()) THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_tick: p_executor_kind % is not one of %',
            coalesce(quote_literal(p_executor_kind), 'NULL'), array_to_string(fn_queue_executor_kinds(), ', ') USING ERRCODE = '22023';
    END IF;
    IF p_status IS NULL OR p_status NOT IN ('ok', 'warn', 'error') THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_tick: p_status % is not one of ok, warn, error',
            coalesce(quote_literal(p_status), 'NULL') USING ERRCODE = '22023';
    END IF;
    PERFORM fn_iu_payload_require_clean('fn_queue_heartbeat_tick', 'p_metadata', v_metadata);

    INSERT INTO queue_heartbeat AS h (executor_id, executor_kind, status, last_beat_at, last_beat_payload,
                                      ticks_total, expected_cadence_seconds, stale_threshold_seconds,
                                      registered_by, last_beat_by)
    VALUES (p_executor_name, p_executor_kind, p_status, now(), v_metadata, 1, 60, 180, v_actor, v_actor)
    ON CONFLICT (executor_id) DO UPDATE
       SET status            = EXCLUDED.status,
           last_beat_at      = EXCLUDED.last_beat_at,
           last_beat_payload = EXCLUDED.last_beat_payload,
           last_beat_by      = EXCLUDED.last_beat_by,
           ticks_total       = h.ticks_total + 1
    RETURNING h.executor_id, (h.xmax = 0) INTO v_id, v_created;
    SELECT * INTO v_row FROM queue_heartbeat WHERE executor_id = v_id;

    RETURN jsonb_build_object('executor_id', v_row.executor_id, 'executor_name', v_row.executor_id,
                              'ticked', true, 'created', v_created)
           || fn_queue_heartbeat_describe(v_row);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_queue_heartbeat_pause(p_executor_id text, p_reason text, p_actor text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    v_row queue_heartbeat;
BEGIN
    IF coalesce(btrim(p_executor_id), '') = '' THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_pause: p_executor_id required' USING ERRCODE = '22023';
    END IF;
    IF coalesce(btrim(p_reason), '') = '' THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_pause: p_reason required' USING ERRCODE = '22023',
            HINT = 'Say why, e.g. ''planned maintenance, ticket OPS-123'': v_queue_health shows it.';
    END IF;
    SELECT * INTO v_row FROM queue_heartbeat WHERE executor_id = p_executor_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_pause: executor % is not registered', quote_literal(p_executor_id)
            USING ERRCODE = 'P0002', HINT = 'List executors: SELECT subject FROM v_queue_health WHERE source = ''heartbeat'';';
    END IF;
    IF v_row.paused_at IS NOT NULL THEN
        RETURN jsonb_build_object('executor_id', p_executor_id, 'paused', true, 'already_paused', true,
                                  'paused_at', v_row.paused_at, 'paused_reason', v_row.paused_reason,
                                  'paused_by', v_row.paused_by);
    END IF;
    UPDATE queue_heartbeat
       SET paused_at = now(), paused_reason = p_reason, paused_by = fn_queue_actor(p_actor)
     WHERE executor_id = p_executor_id
    RETURNING * INTO v_row;
    RETURN jsonb_build_object('executor_id', p_executor_id, 'paused', true, 'already_paused', false,
                              'paused_at', v_row.paused_at, 'paused_reason', v_row.paused_reason,
                              'paused_by', v_row.paused_by);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_queue_heartbeat_resume(p_executor_id text, p_actor text DEFAULT NULL)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- Resuming restarts the executor's clock (last_beat_at = now(), ticks_total unchanged), so
-- the maintenance window is not read as a silent gap. An alert still open from before the
-- pause is closed with it: the silence was superseded by the maintenance, and no
-- queue_worker_recovered is emitted for it (that would be a false heal: nothing beat).
DECLARE
    v_row         queue_heartbeat;
    v_had_alert   boolean;
BEGIN
    IF coalesce(btrim(p_executor_id), '') = '' THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_resume: p_executor_id required' USING ERRCODE = '22023';
    END IF;
    SELECT * INTO v_row FROM queue_heartbeat WHERE executor_id = p_executor_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_resume: executor % is not registered', quote_literal(p_executor_id)
            USING ERRCODE = 'P0002', HINT = 'List executors: SELECT subject FROM v_queue_health WHERE source = ''heartbeat'';';
    END IF;
    IF v_row.paused_at IS NULL THEN
        RETURN jsonb_build_object('executor_id', p_executor_id, 'resumed', false, 'reason', 'not_paused');
    END IF;
    v_had_alert := v_row.alerted_at IS NOT NULL;
    UPDATE queue_heartbeat
       SET paused_at = NULL, paused_reason = NULL, paused_by = NULL,
           last_beat_at = now(), last_beat_by = fn_queue_actor(p_actor),
           silent_since = NULL, alerted_at = NULL, alerted_severity = NULL, alerted_beat_at = NULL
     WHERE executor_id = p_executor_id
    RETURNING * INTO v_row;
    RETURN jsonb_build_object('executor_id', p_executor_id, 'resumed', true,
                              'clock_restarted_at', v_row.last_beat_at,
                              'open_alert_closed', v_had_alert,
                              'resumed_by', v_row.last_beat_by);
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION fn_queue_heartbeat_floor_seconds() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_is_protected(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_describe(queue_heartbeat) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_register(text, text, text[], integer, integer, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_write(text, jsonb, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_tick(text, text, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_pause(text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_resume(text, text) FROM PUBLIC;

-- v_queue_health (015) calls the floor helper, and a view's function calls are checked
-- against its reader.
GRANT EXECUTE ON FUNCTION fn_queue_heartbeat_floor_seconds() TO workflow_admin;

GRANT EXECUTE ON FUNCTION fn_queue_heartbeat_register(text, text, text[], integer, integer, text) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_queue_heartbeat_pause(text, text, text) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_queue_heartbeat_resume(text, text) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_queue_heartbeat_write(text, jsonb, text) TO dot_executor;
GRANT EXECUTE ON FUNCTION fn_queue_heartbeat_tick(text, text, text, jsonb) TO dot_executor;

-- +goose Down
DROP FUNCTION fn_queue_heartbeat_resume(text, text);
DROP FUNCTION fn_queue_heartbeat_pause(text, text, text);
DROP FUNCTION fn_queue_heartbeat_tick(text, text, text, jsonb);
DROP FUNCTION fn_queue_heartbeat_write(text, jsonb, text);
DROP FUNCTION fn_queue_heartbeat_register(text, text, text[], integer, integer, text);
DROP FUNCTION fn_queue_heartbeat_describe(queue_heartbeat);
DROP FUNCTION fn_queue_heartbeat_is_protected(text);
DROP FUNCTION fn_queue_heartbeat_floor_seconds();
DELETE FROM dot_config WHERE key IN ('queue.heartbeat.enabled', 'queue.heartbeat.stale_threshold_seconds',
                                     'queue.heartbeat.protected_executors');
ALTER TABLE queue_heartbeat DROP COLUMN alerted_beat_at;
ALTER TABLE queue_heartbeat DROP COLUMN last_beat_by;
