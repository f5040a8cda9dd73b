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

-- The gate readers run with search_path = pg_catalog, pg_temp and name the table as
-- public.dot_config: public is not on their path, so nothing planted there (an operator, a
-- function, a table) can be resolved by them, and they need no writable-schema guard
-- (fn_iu_require_trusted_search_path, 001). That keeps them cheap enough for every run of
-- every worker to read both. PostgreSQL never looks up functions or operators in pg_temp.
-- The body stays one plain SELECT over dot_config, so the runtime verification can run it
-- against simulated values.
-- +goose StatementBegin
CREATE FUNCTION fn_iu_core_routes_enabled()
RETURNS boolean
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce((SELECT c.value = 'true' FROM public.dot_config c WHERE c.key = 'iu_core.routes_enabled'), false)
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION fn_iu_route_worker_enabled()
RETURNS boolean
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce((SELECT c.value = 'true' FROM public.dot_config c WHERE c.key = 'iu_core.route_worker_enabled'), false)
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION fn_dot_config_touch() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_core_routes_enabled() FROM PUBLIC;
REVOKE ALL ON FUNCTION fn_iu_route_worker_enabled() FROM PUBLIC;

-- +goose Down
DROP FUNCTION fn_iu_route_worker_enabled();
DROP FUNCTION fn_iu_core_routes_enabled();
DROP TABLE dot_config;
DROP FUNCTION fn_dot_config_touch();
