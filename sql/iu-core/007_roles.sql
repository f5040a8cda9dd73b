-- 007_roles.sql
--
-- Adds the two NOLOGIN group roles and the substrate's grants.
--   workflow_admin  operators: register, activate, replay, reset, ping, read the views
--   dot_executor    executors: run the worker, beat, stale-check, claim jobs
--
-- Roles are cluster-wide: a second database in the same cluster migrates too, so creation
-- is idempotent and tolerates a concurrent creator. Down revokes this database's grants
-- and drops a role only when no other database still depends on it and no role is a member
-- of it (dropping it would silently take operators' and executors' access away).

-- +goose Up

-- +goose StatementBegin
DO $$
DECLARE
    v_role text;
BEGIN
    FOREACH v_role IN ARRAY ARRAY['workflow_admin', 'dot_executor'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = v_role) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', v_role);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL; -- another database of this cluster created it concurrently
            END;
        END IF;
    END LOOP;
END;
$$;
-- +goose StatementEnd

GRANT EXECUTE ON FUNCTION fn_iu_emit_event(text, text, text, text, text, text, text, jsonb)
    TO workflow_admin, dot_executor;
GRANT EXECUTE ON FUNCTION fn_iu_core_routes_enabled() TO workflow_admin, dot_executor;
GRANT EXECUTE ON FUNCTION fn_iu_route_worker_enabled() TO workflow_admin, dot_executor;
-- The gate rule itself: pure (a value in, a boolean out, nothing read), so the runtime
-- verification can evaluate the readers' bodies against simulated values as an operator.
GRANT EXECUTE ON FUNCTION fn_iu_gate_open(text) TO workflow_admin, dot_executor;

-- +goose Down
REVOKE EXECUTE ON FUNCTION fn_iu_emit_event(text, text, text, text, text, text, text, jsonb)
    FROM workflow_admin, dot_executor;
REVOKE EXECUTE ON FUNCTION fn_iu_core_routes_enabled() FROM workflow_admin, dot_executor;
REVOKE EXECUTE ON FUNCTION fn_iu_route_worker_enabled() FROM workflow_admin, dot_executor;
REVOKE EXECUTE ON FUNCTION fn_iu_gate_open(text) FROM workflow_admin, dot_executor;

-- +goose StatementBegin
DO $$
DECLARE
    v_role text;
BEGIN
    FOREACH v_role IN ARRAY ARRAY['workflow_admin', 'dot_executor'] LOOP
        IF EXISTS (SELECT 1 FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.roleid
                    WHERE r.rolname = v_role) THEN
            RAISE NOTICE '007_roles down: role % kept: it still has members (REVOKE % FROM ... first to drop it)', v_role, v_role;
            CONTINUE;
        END IF;
        BEGIN
            EXECUTE format('DROP ROLE IF EXISTS %I', v_role);
        EXCEPTION WHEN dependent_objects_still_exist THEN
            RAISE NOTICE '007_roles down: role % kept: another database of this cluster still uses it', v_role;
        END;
    END LOOP;
END;
$$;
-- +goose StatementEnd
