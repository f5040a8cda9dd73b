-- 006_dot_config.sql
--
-- the operator configuration table and the fail-closed gate readers.
--
-- A gate is open only when its key holds exactly 'true'. A missing key, 'false', 'TRUE',
-- ' true', NULL or anything else means off: the safe reading of a typo is "closed".
--
-- A table migration: from the first release on it is never edited again. The first
-- generation's dot_config is adopted in place (iu_core.fn_iu_adopt_dot_config): every key
-- and value kept, the gates as they are.

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    IF to_regclass('public.dot_config') IS NOT NULL THEN
        PERFORM iu_core.fn_iu_adopt_dot_config();
        RETURN;
    END IF;
    CREATE TABLE public.dot_config (
        key         text        PRIMARY KEY,
        value       text        NOT NULL,
        description text        NOT NULL DEFAULT '',
        updated_at  timestamptz NOT NULL DEFAULT now(),
        updated_by  text        NOT NULL DEFAULT current_user
    );
END;
$$;
-- +goose StatementEnd

COMMENT ON TABLE public.dot_config IS 'Operator configuration. Gates are fail-closed: only the exact value ''true'' opens one.';

CREATE TRIGGER trg_dot_config_touch
    BEFORE UPDATE ON public.dot_config
    FOR EACH ROW EXECUTE FUNCTION iu_core.fn_dot_config_touch();

INSERT INTO public.dot_config (key, value, description) VALUES
    ('iu_core.routes_enabled',       'false', 'Master gate of iu-core routing. Only ''true'' opens it.'),
    ('iu_core.route_worker_enabled', 'false', 'Route worker kill-switch. Only ''true'' opens it.')
ON CONFLICT (key) DO NOTHING;

-- +goose Down
-- +goose StatementBegin
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM iu_core.iu_adoption WHERE object = 'public.dot_config') THEN
        PERFORM iu_core.fn_iu_forget_config(ARRAY['iu_core.routes_enabled', 'iu_core.route_worker_enabled']);
        PERFORM iu_core.fn_iu_unadopt('public.dot_config');
    ELSE
        PERFORM iu_core.fn_iu_require_empty_history_at(6);
        DROP TABLE public.dot_config;
    END IF;
END;
$$;
-- +goose StatementEnd
