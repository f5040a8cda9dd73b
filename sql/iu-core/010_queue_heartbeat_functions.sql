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
--                                                    whitespace separated) that no caller may
--                                                    beat (ping, tick and write refuse them);
--                                                    iu_outbound_default is always protected
--
-- Why: an executor that beats on every tick, work or no work, makes "alive and idle"
-- observable and different from "silently dead". Each beat records who wrote it: the actor
-- the caller claims (last_beat_by) and the login PostgreSQL authenticated
-- (last_beat_session_user), so a spoofed p_actor is visible.
--
-- Trust boundaries (callers may be automated agents, and may err on purpose):
--   protected executors  a protected id (iu_outbound_default, the legacy marker, and the ids
--                        in queue.heartbeat.protected_executors) is beaten by no caller: tick,
--                        write and the ping return {"refused": true, "reason":
--                        "protected_legacy_silent_passive"} and write nothing. Only real work
--                        heals it: the route worker of that name beats its own row directly.
--   owning role          fn_queue_heartbeat_register(..., p_owner_role) binds an executor to a
--                        role; then only sessions whose login (session_user) is a member of
--                        that role may beat it (42501 otherwise). Unbound executors (NULL)
--                        may be beaten by any dot_executor, as before.
--   alert state          queue_stale_alert (added here) is the stale-check's own memory: one
--                        row per executor, written only by the package (the stale-check, and
--                        resume closing an open alert). No role is granted anything on it.
--
-- Defaults of the primitive fn_queue_heartbeat_tick for an executor it has never seen come
-- from fn_queue_heartbeat_defaults (008): expected cadence 60 s, stale threshold 180 s
-- (three missed beats). Register the executor
-- (fn_queue_heartbeat_register) to set its own values.

-- +goose Up

ALTER TABLE queue_heartbeat ADD COLUMN last_beat_by text;
ALTER TABLE queue_heartbeat ADD COLUMN last_beat_session_user text;
ALTER TABLE queue_heartbeat ADD COLUMN paused_session_user text;
ALTER TABLE queue_heartbeat ADD COLUMN owner_role text;
COMMENT ON COLUMN queue_heartbeat.last_beat_by IS 'Actor of the last beat as the caller claims it (p_actor, app.actor or the login).';
COMMENT ON COLUMN queue_heartbeat.last_beat_session_user IS 'Login (session_user) that wrote the last beat: what PostgreSQL authenticated.';
COMMENT ON COLUMN queue_heartbeat.paused_session_user IS 'Login (session_user) that paused the executor.';
COMMENT ON COLUMN queue_heartbeat.owner_role IS
    'Owning role (fn_queue_heartbeat_register p_owner_role): only its members'' sessions may beat the executor. NULL: any dot_executor.';

-- The stale-check's own alert state. It used to live on the heartbeat row and the
-- "already alerted in the window" rule read event_outbox: a caller able to write either
-- could make a real silence look handled (a forged silent alert, or a held lock on the
-- heartbeat row that the check skipped). Here it is a table of its own: one row per
-- executor (created with the heartbeat row, by trigger), written only by the package;
-- the stale-check locks this row, never the heartbeat row, so an executor that keeps its
-- own row locked cannot blind the check.
CREATE TABLE queue_stale_alert (
    executor_id      text        PRIMARY KEY,
    -- the open silence, if any, and the last alert sent for it
    silent_since     timestamptz,
    alerted_at       timestamptz,
    alerted_severity text        CHECK (alerted_severity IN ('warning', 'critical')),
    -- last_beat_at as it was when the open silence was alerted; a later beat is a recovery
    alerted_beat_at  timestamptz,
    -- the window memory: when a silent alert of each severity last went out for this
    -- executor (survives recovery, resume and re-registration, so the "no repeat inside
    -- 2 x threshold" rule holds whatever happened since)
    last_warning_at  timestamptz,
    last_critical_at timestamptz
);
COMMENT ON TABLE queue_stale_alert IS
    'fn_queue_stale_check''s own alert state, one row per executor. Written only by the package; no grants.';

-- +goose StatementBegin
CREATE FUNCTION fn_queue_stale_alert_row()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    -- Every heartbeat row gets its alert-state row in the same transaction, whoever created
    -- it (the register, tick and route-worker paths alike), so the stale-check always has
    -- a row to lock. Kept when the heartbeat row goes: the window memory outlives it.
    INSERT INTO queue_stale_alert (executor_id) VALUES (NEW.executor_id) ON CONFLICT (executor_id) DO NOTHING;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER trg_queue_stale_alert_row
    AFTER INSERT ON queue_heartbeat
    FOR EACH ROW EXECUTE FUNCTION fn_queue_stale_alert_row();
INSERT INTO queue_stale_alert (executor_id) SELECT executor_id FROM queue_heartbeat ON CONFLICT DO NOTHING;

INSERT INTO dot_config (key, value, description) VALUES
    ('queue.heartbeat.enabled', 'true',
     'Heartbeat ping gate (fn_cut_heartbeat_ping). Only ''true'' opens it; otherwise pings return {"skipped": true}.'),
    ('queue.heartbeat.stale_threshold_seconds', '60',
     'Global floor (seconds) over every executor''s own stale threshold. Any non-negative integer (clamped to 2147483647); a missing or non-integer value means no floor. Set it huge to make fn_queue_stale_check inert.'),
    ('queue.heartbeat.protected_executors', '',
     'Executor ids (comma or whitespace separated) that no caller may beat (fn_cut_heartbeat_ping, fn_queue_heartbeat_tick and fn_queue_heartbeat_write refuse them), on top of iu_outbound_default, which is always protected.')
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
    -- v_queue_health (workflow_admin) need not read dot_config themselves. The
    -- writable-schema guard runs first (the CASE evaluates its condition before the rest).
    SELECT CASE WHEN fn_iu_require_trusted_search_path('fn_queue_heartbeat_floor_seconds') THEN coalesce((
        SELECT CASE WHEN length(v.digits) > 10 THEN 2147483647
                    ELSE least(v.digits::bigint, 2147483647)::integer END
          FROM dot_config c
         CROSS JOIN LATERAL (
               SELECT coalesce(nullif(ltrim(regexp_replace(c.value, '^[[:space:]]+|[[:space:]]+$', '', 'g'), '0'), ''), '0')
               ) AS v(digits)
         WHERE c.key = 'queue.heartbeat.stale_threshold_seconds'
           AND c.value ~ '^[[:space:]]*[0-9]+[[:space:]]*$'), 0) END
$$;
-- +goose StatementEnd

-- The staleness assessment, each rule once, read by fn_queue_stale_check (012) and
-- v_queue_health (015) alike. Three one-expression SQL functions, so the planner inlines
-- them into both (no call per executor on 10,000 rows). All times are passed in, so the
-- check and the view judge one instant.
--   fn_queue_heartbeat_is_stale   silent for longer than greatest(own threshold, global floor)
--   fn_queue_heartbeat_gap_ratio  whole seconds of silence / expected cadence, truncated to
--                                 2 decimals (the value alerts report)
--   fn_queue_heartbeat_severity   decided on that reported value: warning below 10,
--                                 critical from 10 (a payload never shows 10.00 with warning)
-- +goose StatementBegin
CREATE FUNCTION fn_queue_heartbeat_is_stale(p_last_beat_at timestamptz, p_stale_threshold_seconds integer,
                                            p_floor_seconds integer, p_now timestamptz)
RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    -- Written as a timestamp comparison (an interval subtraction and comparison per row
    -- costs ten times more on 10,000 executors). timestamptz - interval is STABLE (it reads
    -- the time zone), and a body must be no less stable than its function for the planner
    -- to inline it: hence STABLE, not IMMUTABLE.
    SELECT p_last_beat_at < p_now - make_interval(secs => greatest(p_stale_threshold_seconds, p_floor_seconds))
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_queue_heartbeat_gap_ratio(p_last_beat_at timestamptz, p_expected_cadence_seconds integer,
                                             p_now timestamptz)
RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT trunc(floor(extract(epoch FROM (p_now - p_last_beat_at)))::numeric / p_expected_cadence_seconds, 2)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_queue_heartbeat_severity(p_gap_ratio numeric)
RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN p_gap_ratio < 10 THEN 'warning' ELSE 'critical' END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_queue_heartbeat_is_protected(p_executor_id text)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = public, pg_temp
AS $$
    -- The protected set, in one place: iu_outbound_default always, plus the ids listed in
    -- queue.heartbeat.protected_executors.
    SELECT p_executor_id = 'iu_outbound_default'
        OR EXISTS (SELECT 1 FROM dot_config c
                    CROSS JOIN LATERAL regexp_split_to_table(c.value, '[\s,]+') AS x(id)
                    WHERE c.key = 'queue.heartbeat.protected_executors'
                      AND x.id <> '' AND x.id = p_executor_id)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_queue_heartbeat_refusal(p_executor_id text)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = public, pg_temp
AS $$
    -- The one refusal every caller-facing beat returns for a protected executor (ping, tick,
    -- write), or NULL when the executor may be beaten. A refusal is JSON, not an exception:
    -- the caller sees the reason, and nothing was written.
    SELECT CASE WHEN fn_queue_heartbeat_is_protected(p_executor_id)
                THEN jsonb_build_object('refused', true, 'reason', 'protected_legacy_silent_passive') END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_queue_heartbeat_may_beat(p_owner_role text)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = public, pg_temp
AS $$
    -- The binding rule: an unbound executor (NULL) may be beaten by any caller of the beat
    -- functions; a bound one only by a session whose login is a member of the owning role
    -- (directly or through other roles). session_user, not current_user: inside these
    -- SECURITY DEFINER functions current_user is the package owner, and SET ROLE must not
    -- lend one login another's executors. A dropped owning role binds to nobody.
    SELECT p_owner_role IS NULL
        OR (EXISTS (SELECT 1 FROM pg_catalog.pg_roles r WHERE r.rolname = p_owner_role)
            AND pg_catalog.pg_has_role(session_user, p_owner_role, 'MEMBER'))
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_queue_heartbeat_refuse_foreign(p_caller text, p_executor_id text, p_owner_role text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = public, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION '%: executor % is bound to role %; login % is not a member of it', p_caller,
        quote_literal(p_executor_id), quote_ident(p_owner_role), quote_ident(session_user)
        USING ERRCODE = '42501',
              HINT = format('Beat it from a login of that role, or an operator grants it: GRANT %I TO %I;',
                            p_owner_role, session_user);
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_queue_heartbeat_register(
    p_executor_id              text,
    p_kind                     text,
    p_domain_scope             text[],
    p_expected_cadence_seconds integer,
    p_stale_threshold_seconds  integer,
    p_actor                    text DEFAULT NULL,
    p_owner_role               text DEFAULT NULL
)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
-- p_owner_role (optional, last so existing positional calls keep working): bind the
-- executor to a role; NULL or blank leaves it unbound. It is configuration like the
-- cadence: a re-registration stores what it is given (NULL unbinds).
DECLARE
    v_row     queue_heartbeat;
    v_id      text;
    v_created boolean;
    v_actor   text;
    v_owner   text;
    v_dom     text;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_queue_heartbeat_register');
    v_actor := fn_queue_actor(p_actor, 'fn_queue_heartbeat_register');
    PERFORM fn_iu_require_name('fn_queue_heartbeat_register', 'p_executor_id', p_executor_id);
    IF p_kind IS NULL OR NOT p_kind = ANY (fn_queue_executor_kinds()) THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_register: p_kind % is not one of %',
            coalesce(quote_literal(left(p_kind, 60)), 'NULL'), array_to_string(fn_queue_executor_kinds(), ', ') USING ERRCODE = '22023';
    END IF;
    IF p_domain_scope IS NULL OR array_position(p_domain_scope, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_register: p_domain_scope must be an array of non-empty domains (it may be empty: ''{}'')'
            USING ERRCODE = '22023';
    END IF;
    IF cardinality(p_domain_scope) > 100 THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_register: p_domain_scope has % domains, at most 100 allowed', cardinality(p_domain_scope)
            USING ERRCODE = '22023';
    END IF;
    FOREACH v_dom IN ARRAY p_domain_scope LOOP
        PERFORM fn_iu_require_name('fn_queue_heartbeat_register', 'p_domain_scope element', v_dom);
    END LOOP;
    IF p_expected_cadence_seconds IS NULL OR p_expected_cadence_seconds <= 0 THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_register: p_expected_cadence_seconds must be > 0, got %',
            coalesce(p_expected_cadence_seconds::text, 'NULL') USING ERRCODE = '22023';
    END IF;
    IF p_stale_threshold_seconds IS NULL OR p_stale_threshold_seconds <= 0 THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_register: p_stale_threshold_seconds must be > 0, got %',
            coalesce(p_stale_threshold_seconds::text, 'NULL') USING ERRCODE = '22023',
            HINT = 'A threshold of about three times the expected cadence tolerates two missed beats.';
    END IF;
    v_owner := nullif(btrim(p_owner_role, E' \t\r\n\f\x0B'), '');
    IF v_owner IS NOT NULL THEN
        PERFORM fn_iu_require_name('fn_queue_heartbeat_register', 'p_owner_role', v_owner, 63);
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles r WHERE r.rolname = v_owner) THEN
            RAISE EXCEPTION 'fn_queue_heartbeat_register: p_owner_role % is not a role', quote_ident(v_owner)
                USING ERRCODE = '22023', HINT = 'Name an existing role (the executor''s login or a group of logins), exactly as in pg_roles.';
        END IF;
    END IF;

    -- Idempotent: a second registration with the same values changes nothing; different
    -- values update the executor's configuration (never its beat history).
    INSERT INTO queue_heartbeat AS h (executor_id, executor_kind, domain_scope, expected_cadence_seconds,
                                      stale_threshold_seconds, registered_by, last_beat_by, last_beat_session_user,
                                      owner_role)
    VALUES (p_executor_id, p_kind, p_domain_scope, p_expected_cadence_seconds, p_stale_threshold_seconds,
            v_actor, v_actor, session_user, v_owner)
    ON CONFLICT (executor_id) DO UPDATE
       SET executor_kind            = EXCLUDED.executor_kind,
           domain_scope             = EXCLUDED.domain_scope,
           expected_cadence_seconds = EXCLUDED.expected_cadence_seconds,
           stale_threshold_seconds  = EXCLUDED.stale_threshold_seconds,
           owner_role               = EXCLUDED.owner_role
     WHERE (h.executor_kind, h.domain_scope, h.expected_cadence_seconds, h.stale_threshold_seconds, h.owner_role)
           IS DISTINCT FROM (EXCLUDED.executor_kind, EXCLUDED.domain_scope, EXCLUDED.expected_cadence_seconds,
                             EXCLUDED.stale_threshold_seconds, EXCLUDED.owner_role)
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
        'last_beat_by',             p_row.last_beat_by,
        'last_beat_session_user',   p_row.last_beat_session_user,
        'registered_at',            p_row.registered_at,
        'registered_by',            p_row.registered_by,
        'registered_session_user',  p_row.registered_session_user,
        'owner_role',               p_row.owner_role,
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
    v_actor   text;
    v_owner   text;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_queue_heartbeat_write');
    PERFORM fn_iu_require_name('fn_queue_heartbeat_write', 'p_executor_id', p_executor_id);
    IF fn_queue_heartbeat_is_protected(p_executor_id) THEN
        RETURN fn_queue_heartbeat_refusal(p_executor_id);
    END IF;
    v_actor := fn_queue_actor(p_actor, 'fn_queue_heartbeat_write');
    PERFORM fn_iu_payload_require_clean('fn_queue_heartbeat_write', 'p_payload', v_payload);

    -- The binding is tested in the UPDATE itself, on the row version it changes, so a
    -- concurrent re-registration cannot slip a beat past it.
    UPDATE queue_heartbeat h
       SET last_beat_at           = now(),
           last_beat_payload      = v_payload,
           last_beat_by           = v_actor,
           last_beat_session_user = session_user,
           ticks_total            = h.ticks_total + 1
     WHERE h.executor_id = p_executor_id
       AND fn_queue_heartbeat_may_beat(h.owner_role)
    RETURNING * INTO v_row;
    IF NOT FOUND THEN
        SELECT h.owner_role INTO v_owner FROM queue_heartbeat h WHERE h.executor_id = p_executor_id;
        IF FOUND THEN
            PERFORM fn_queue_heartbeat_refuse_foreign('fn_queue_heartbeat_write', p_executor_id, v_owner);
        END IF;
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
-- and timings, and gets the beat, the status and the metadata. A protected executor is
-- refused (JSON, no write); a bound one is beaten only by its owning role's logins.
DECLARE
    v_row      queue_heartbeat;
    v_id       text;
    v_created  boolean;
    v_metadata jsonb := coalesce(p_metadata, '{}'::jsonb);
    v_actor    text;
    v_owner    text;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_queue_heartbeat_tick');
    PERFORM fn_iu_require_name('fn_queue_heartbeat_tick', 'p_executor_name', p_executor_name);
    IF fn_queue_heartbeat_is_protected(p_executor_name) THEN
        RETURN fn_queue_heartbeat_refusal(p_executor_name);
    END IF;
    IF p_executor_kind IS NULL OR NOT p_executor_kind = ANY (fn_queue_executor_kinds()) THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_tick: p_executor_kind % is not one of %',
            coalesce(quote_literal(left(p_executor_kind, 60)), 'NULL'), array_to_string(fn_queue_executor_kinds(), ', ') USING ERRCODE = '22023';
    END IF;
    IF p_status IS NULL OR p_status NOT IN ('ok', 'warn', 'error') THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_tick: p_status % is not one of ok, warn, error',
            coalesce(quote_literal(left(p_status, 60)), 'NULL') USING ERRCODE = '22023';
    END IF;
    v_actor := fn_queue_actor(NULL, 'fn_queue_heartbeat_tick');
    PERFORM fn_iu_payload_require_clean('fn_queue_heartbeat_tick', 'p_metadata', v_metadata);

    INSERT INTO queue_heartbeat AS h (executor_id, executor_kind, status, last_beat_at, last_beat_payload,
                                      ticks_total, expected_cadence_seconds, stale_threshold_seconds,
                                      registered_by, last_beat_by, last_beat_session_user)
    SELECT p_executor_name, p_executor_kind, p_status, now(), v_metadata, 1,
           d.expected_cadence_seconds, d.stale_threshold_seconds, v_actor, v_actor, session_user
      FROM fn_queue_heartbeat_defaults(p_executor_kind) d
    ON CONFLICT (executor_id) DO UPDATE
       SET status                 = EXCLUDED.status,
           last_beat_at           = EXCLUDED.last_beat_at,
           last_beat_payload      = EXCLUDED.last_beat_payload,
           last_beat_by           = EXCLUDED.last_beat_by,
           last_beat_session_user = EXCLUDED.last_beat_session_user,
           ticks_total            = h.ticks_total + 1
     WHERE fn_queue_heartbeat_may_beat(h.owner_role)
    RETURNING h.executor_id, (h.xmax = 0) INTO v_id, v_created;
    IF v_id IS NULL THEN
        -- The row exists and is bound to a role this login is not a member of.
        SELECT h.owner_role INTO v_owner FROM queue_heartbeat h WHERE h.executor_id = p_executor_name;
        PERFORM fn_queue_heartbeat_refuse_foreign('fn_queue_heartbeat_tick', p_executor_name, v_owner);
    END IF;
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
    PERFORM fn_iu_require_trusted_search_path('fn_queue_heartbeat_pause');
    PERFORM fn_iu_require_name('fn_queue_heartbeat_pause', 'p_executor_id', p_executor_id);
    IF p_reason IS NULL OR btrim(p_reason, E' \t\r\n\f\x0B') = '' THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_pause: p_reason required' USING ERRCODE = '22023',
            HINT = 'Say why, e.g. ''planned maintenance, ticket OPS-123'': v_queue_health shows it.';
    END IF;
    PERFORM fn_iu_require_name('fn_queue_heartbeat_pause', 'p_reason', p_reason, 1000);
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
       SET paused_at = now(), paused_reason = p_reason, paused_by = fn_queue_actor(p_actor, 'fn_queue_heartbeat_pause'),
           paused_session_user = session_user
     WHERE executor_id = p_executor_id
    RETURNING * INTO v_row;
    RETURN jsonb_build_object('executor_id', p_executor_id, 'paused', true, 'already_paused', false,
                              'paused_at', v_row.paused_at, 'paused_reason', v_row.paused_reason,
                              'paused_by', v_row.paused_by, 'paused_session_user', v_row.paused_session_user);
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
-- queue_worker_recovered is emitted for it (that would be a false heal: nothing beat). The
-- window memory (last alert per severity) is kept: resuming never makes an alert repeat.
DECLARE
    v_row         queue_heartbeat;
    v_had_alert   boolean;
BEGIN
    PERFORM fn_iu_require_trusted_search_path('fn_queue_heartbeat_resume');
    PERFORM fn_iu_require_name('fn_queue_heartbeat_resume', 'p_executor_id', p_executor_id);
    SELECT * INTO v_row FROM queue_heartbeat WHERE executor_id = p_executor_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'fn_queue_heartbeat_resume: executor % is not registered', quote_literal(p_executor_id)
            USING ERRCODE = 'P0002', HINT = 'List executors: SELECT subject FROM v_queue_health WHERE source = ''heartbeat'';';
    END IF;
    IF v_row.paused_at IS NULL THEN
        RETURN jsonb_build_object('executor_id', p_executor_id, 'resumed', false, 'reason', 'not_paused');
    END IF;
    UPDATE queue_stale_alert a
       SET silent_since = NULL, alerted_at = NULL, alerted_severity = NULL, alerted_beat_at = NULL
     WHERE a.executor_id = p_executor_id AND a.alerted_at IS NOT NULL;
    v_had_alert := FOUND;
    UPDATE queue_heartbeat
       SET paused_at = NULL, paused_reason = NULL, paused_by = NULL, paused_session_user = NULL,
           last_beat_at = now(), last_beat_by = fn_queue_actor(p_actor, 'fn_queue_heartbeat_resume'),
           last_beat_session_user = session_user
     WHERE executor_id = p_executor_id
    RETURNING * INTO v_row;
    RETURN jsonb_build_object('executor_id', p_executor_id, 'resumed', true,
                              'clock_restarted_at', v_row.last_beat_at,
                              'open_alert_closed', v_had_alert,
                              'resumed_by', v_row.last_beat_by,
                              'resumed_session_user', v_row.last_beat_session_user);
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON TABLE queue_stale_alert FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_stale_alert_row() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_floor_seconds() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_is_stale(timestamptz, integer, integer, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_gap_ratio(timestamptz, integer, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_severity(numeric) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_is_protected(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_refusal(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_may_beat(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_refuse_foreign(text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_describe(queue_heartbeat) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_register(text, text, text[], integer, integer, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_write(text, jsonb, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_tick(text, text, text, jsonb) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_pause(text, text, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_queue_heartbeat_resume(text, text) FROM PUBLIC;

-- v_queue_health (015) calls the floor helper, and a view's function calls are checked
-- against its reader.
GRANT EXECUTE ON FUNCTION fn_queue_heartbeat_floor_seconds() TO workflow_admin;
-- v_queue_health inlines the assessment; inlining needs its reader's EXECUTE (pure functions).
GRANT EXECUTE ON FUNCTION fn_queue_heartbeat_is_stale(timestamptz, integer, integer, timestamptz) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_queue_heartbeat_gap_ratio(timestamptz, integer, timestamptz) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_queue_heartbeat_severity(numeric) TO workflow_admin;

GRANT EXECUTE ON FUNCTION fn_queue_heartbeat_register(text, text, text[], integer, integer, text, text) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_queue_heartbeat_pause(text, text, text) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_queue_heartbeat_resume(text, text) TO workflow_admin;
GRANT EXECUTE ON FUNCTION fn_queue_heartbeat_write(text, jsonb, text) TO dot_executor;
GRANT EXECUTE ON FUNCTION fn_queue_heartbeat_tick(text, text, text, jsonb) TO dot_executor;

-- +goose Down
DROP FUNCTION fn_queue_heartbeat_resume(text, text);
DROP FUNCTION fn_queue_heartbeat_pause(text, text, text);
DROP FUNCTION fn_queue_heartbeat_tick(text, text, text, jsonb);
DROP FUNCTION fn_queue_heartbeat_write(text, jsonb, text);
DROP FUNCTION fn_queue_heartbeat_register(text, text, text[], integer, integer, text, text);
DROP FUNCTION fn_queue_heartbeat_describe(queue_heartbeat);
DROP FUNCTION fn_queue_heartbeat_refuse_foreign(text, text, text);
DROP FUNCTION fn_queue_heartbeat_may_beat(text);
DROP FUNCTION fn_queue_heartbeat_refusal(text);
DROP FUNCTION fn_queue_heartbeat_is_protected(text);
DROP FUNCTION fn_queue_heartbeat_severity(numeric);
DROP FUNCTION fn_queue_heartbeat_gap_ratio(timestamptz, integer, timestamptz);
DROP FUNCTION fn_queue_heartbeat_is_stale(timestamptz, integer, integer, timestamptz);
DROP FUNCTION fn_queue_heartbeat_floor_seconds();
DELETE FROM dot_config WHERE key IN ('queue.heartbeat.enabled', 'queue.heartbeat.stale_threshold_seconds',
                                     'queue.heartbeat.protected_executors');
DROP TRIGGER trg_queue_stale_alert_row ON queue_heartbeat;
DROP FUNCTION fn_queue_stale_alert_row();
DROP TABLE queue_stale_alert;
ALTER TABLE queue_heartbeat DROP COLUMN owner_role;
ALTER TABLE queue_heartbeat DROP COLUMN paused_session_user;
ALTER TABLE queue_heartbeat DROP COLUMN last_beat_session_user;
ALTER TABLE queue_heartbeat DROP COLUMN last_beat_by;
