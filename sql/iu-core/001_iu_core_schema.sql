-- 001_iu_core_schema.sql
--
-- The package's own schema and its two group roles. A table migration: from the first
-- release on it is never edited again (a change is a new migration).
--
-- iu_core holds the package's internals: every function that is not part of the API, and
-- the internal types. It is owned by the package owner (the role that runs the migrations),
-- nobody else may create in it, and it is in nobody's search_path: every SECURITY DEFINER
-- function pins `search_path = pg_catalog, pg_temp` and names everything of the package
-- explicitly (iu_core.fn_..., public.event_outbox), so no schema an untrusted role can write
-- is ever searched on the package's behalf. PUBLIC gets no USAGE: a role that was granted
-- EXECUTE on an internal function (a producer, on the outbox's row rules; an operator, on
-- what a view calls) reaches it through the stored expression that calls it, by its oid,
-- and cannot name it. The API keeps its names in public, callable unqualified.
--
-- The roles (NOLOGIN, cluster-wide):
--   workflow_admin  operators: register, activate, replay, reset, ping, read the views
--   dot_executor    executors: run the worker, beat, stale-check, claim jobs
-- Creation is idempotent and tolerates a concurrent creator (a second database of the
-- cluster migrates too). Down drops a role only when no other database still depends on it
-- and no role is a member of it (dropping it would silently take access away).

-- +goose Up
CREATE SCHEMA iu_core;
REVOKE ALL ON SCHEMA iu_core FROM PUBLIC;
COMMENT ON SCHEMA iu_core IS
    'iu-core internals: functions and types the API calls. Owned by the package owner; in nobody''s search_path.';

-- +goose StatementBegin
DO $$
DECLARE
    v_role text;
BEGIN
    FOREACH v_role IN ARRAY ARRAY['workflow_admin', 'dot_executor'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = v_role) THEN
            BEGIN
                EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', v_role);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL; -- another database of this cluster created it concurrently
            END;
        END IF;
    END LOOP;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    v_role text;
BEGIN
    FOREACH v_role IN ARRAY ARRAY['workflow_admin', 'dot_executor'] LOOP
        IF EXISTS (SELECT 1 FROM pg_catalog.pg_auth_members m JOIN pg_catalog.pg_roles r ON r.oid = m.roleid
                    WHERE r.rolname = v_role) THEN
            RAISE NOTICE '001_iu_core_schema down: role % kept: it still has members (REVOKE % FROM ... first to drop it)', v_role, v_role;
            CONTINUE;
        END IF;
        BEGIN
            EXECUTE pg_catalog.format('DROP ROLE IF EXISTS %I', v_role);
        EXCEPTION WHEN dependent_objects_still_exist THEN
            RAISE NOTICE '001_iu_core_schema down: role % kept: another database of this cluster still uses it', v_role;
        END;
    END LOOP;
END;
$$;
-- +goose StatementEnd
DROP SCHEMA iu_core;
