-- 060_route_worker_activate.sql — register the default route worker, gate closed.
--
--   psql "$DATABASE_URL" -X -v ON_ERROR_STOP=1 -f sql/iu-core/runtime/060_route_worker_activate.sql
--
-- What it does, in one transaction (all or nothing):
--   1. fn_iu_route_worker_register('iu_outbound_default', 'iu'): creates the worker's cursor
--      at the start of the 'iu' stream and its PG_worker heartbeat row. Idempotent: an
--      existing cursor keeps its position and counters.
--   2. Sets dot_config 'iu_core.route_worker_enabled' to 'false'. Activation NEVER opens a
--      gate by itself: opening the worker gate (and the master gate iu_core.routes_enabled,
--      which this script does not touch) is a separate, deliberate operator step
--      (runbooks/route-worker-activate.md). Re-running this script therefore closes a
--      worker gate that was opened in the meantime.
--   3. Prints the resulting state, one row.
-- Safe to run any number of times: a second run changes nothing (the gate row is only
-- rewritten when it is not already 'false', so its updated_at/updated_by stay put).
-- Run it as the package owner (the role that ran the migrations) or a superuser.

\set ON_ERROR_STOP on
-- Everything of the package is named with its schema (public.x) and the path holds only
-- pg_catalog: no search_path a database owner, role or session set can redirect this script.
SET search_path = pg_catalog, pg_temp;

-- Refuse early, with the fix, when the worker functions are not installed.
DO $$
BEGIN
    IF to_regprocedure('public.fn_iu_route_worker_register(text,text)') IS NULL THEN
        RAISE EXCEPTION '060_route_worker_activate: fn_iu_route_worker_register(text, text) is missing'
            USING ERRCODE = '42883',
                  HINT = 'Apply the migrations first (iu-runner migrate up, or goose -table iu_core_db_version -dir sql/iu-core postgres "$DATABASE_URL" up).';
    END IF;
    IF to_regclass('public.dot_config') IS NULL THEN
        RAISE EXCEPTION '060_route_worker_activate: table dot_config is missing'
            USING ERRCODE = '42P01', HINT = 'Apply the migrations first.';
    END IF;
END;
$$;

BEGIN;

SELECT public.fn_iu_route_worker_register('iu_outbound_default', 'iu') AS register_result
\gset activate_

INSERT INTO public.dot_config AS c (key, value, description)
VALUES ('iu_core.route_worker_enabled', 'false', 'Route worker kill-switch. Only ''true'' opens it.')
ON CONFLICT (key) DO UPDATE SET value = 'false'
 WHERE c.value IS DISTINCT FROM 'false';

COMMIT;

\echo 'route worker activation: iu_outbound_default registered, worker gate left CLOSED'
\x on
SELECT cur.worker_name                                  AS worker,
       cur.event_domain                                 AS event_domain,
       public.fn_iu_core_routes_enabled()                      AS master_gate_open,
       public.fn_iu_route_worker_enabled()                     AS worker_gate_open,
       (SELECT value FROM public.dot_config WHERE key = 'iu_core.routes_enabled')       AS master_gate_value,
       (SELECT value FROM public.dot_config WHERE key = 'iu_core.route_worker_enabled') AS worker_gate_value,
       EXISTS (SELECT 1 FROM public.queue_heartbeat h WHERE h.executor_id = cur.worker_name) AS heartbeat_registered,
       cur.runs_total,
       cur.events_seen,
       cur.registered_at,
       :'activate_register_result'::jsonb               AS register_result
  FROM public.iu_route_worker_cursor cur
 WHERE cur.worker_name = 'iu_outbound_default';
\x off
