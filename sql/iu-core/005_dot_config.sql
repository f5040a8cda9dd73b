-- 005_dot_config.sql
--
-- Adds the operator configuration table and the fail-closed gate readers.
--
-- A gate is open only when its key holds exactly 'true'. A missing key, 'false', 'TRUE',
-- ' true', NULL or anything else means off: the safe reading of a typo is "closed".

-- +goose Up
CREATE TABLE dot_config (
    key         text        PRIMARY KEY,
    value       text        NOT NULL,
    description text        NOT NULL DEFAULT '',
    updated_at  timestamptz NOT NULL DEFAULT now(),
    updated_by  text        NOT NULL DEFAULT current_user
);

COMMENT ON TABLE dot_config IS 'Operator configuration. Gates are fail-closed: only the exact value ''true'' opens one.';

-- +goose StatementBegin
CREATE FUNCTION fn_dot_config_touch()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    NEW.updated_at := now();
    NEW.updated_by := current_user;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER trg_dot_config_touch
    BEFORE UPDATE ON dot_config
    FOR EACH ROW EXECUTE FUNCTION fn_dot_config_touch();

INSERT INTO dot_config (key, value, description) VALUES
    ('iu_core.routes_enabled',       'false', 'Master gate of iu-core routing. Only ''true'' opens it.'),
    ('iu_core.route_worker_enabled', 'false', 'Route worker kill-switch. Only ''true'' opens it.');

-- fn_iu_gate_open(p_value): THE gate rule, written once: a gate is open only when its key
-- holds exactly 'true' (p_value is the stored value, NULL when the key is missing). Pure
-- and inlinable SQL, so a reader or a run's idle probe plans it into its own statement.
-- +goose StatementBegin
CREATE FUNCTION fn_iu_gate_open(p_value text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT coalesce(p_value = 'true', false)
$$;
-- +goose StatementEnd

-- The gate readers run with search_path = pg_catalog, pg_temp and name the table and the
-- rule as public.dot_config and public.fn_iu_gate_open: public is not on their path, so
-- nothing planted there (an operator, a function, a table) can be resolved by them, and
-- they need no writable-schema guard (fn_iu_require_trusted_search_path, 001). That keeps
-- them cheap enough to call anywhere. PostgreSQL never looks up functions or operators in
-- pg_temp. They are PL/pgSQL for the same reason: PostgreSQL re-parses and re-plans the
-- body of a LANGUAGE sql function that cannot be inlined (SECURITY DEFINER, SET) on every
-- call from a new statement, where PL/pgSQL plans its query once per session. The body
-- stays one RETURN of one SELECT over public.dot_config, so the runtime verification can
-- lift that SELECT out and run it against simulated values.
-- +goose StatementBegin
CREATE FUNCTION fn_iu_core_routes_enabled()
RETURNS boolean
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (SELECT public.fn_iu_gate_open((SELECT c.value FROM public.dot_config c WHERE c.key = 'iu_core.routes_enabled')));
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_enabled()
RETURNS boolean
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (SELECT public.fn_iu_gate_open((SELECT c.value FROM public.dot_config c WHERE c.key = 'iu_core.route_worker_enabled')));
END;
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION fn_dot_config_touch() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_core_routes_enabled() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_enabled() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_gate_open(text) FROM PUBLIC;

-- +goose Down
DROP FUNCTION fn_iu_route_worker_enabled();
DROP FUNCTION fn_iu_core_routes_enabled();
DROP FUNCTION fn_iu_gate_open(text);
DROP TABLE dot_config;
DROP FUNCTION fn_dot_config_touch();
