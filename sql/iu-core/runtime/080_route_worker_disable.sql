-- 080_route_worker_disable.sql — close the route worker gate and report the state.
--
--   psql "$DATABASE_URL" -X -v ON_ERROR_STOP=1 -f sql/iu-core/runtime/080_route_worker_disable.sql
--
-- Sets dot_config 'iu_core.route_worker_enabled' to 'false' (creating the key if it is
-- missing — a missing key already reads as closed, the row makes the intent explicit).
-- From the next call on, fn_iu_route_worker_run is a gated no-op: it claims nothing, the
-- cursor does not move, and it still ticks the worker's heartbeat with the reason.
-- A run already in progress finishes its own batch (it is one transaction); it is listed
-- below if there is one. The master gate iu_core.routes_enabled is left as it is.
-- Nothing is deleted: cursor, attempts and dead letters stay for a later re-activation.
-- Idempotent. Run it as the package owner (the role that ran the migrations) or a superuser.

\set ON_ERROR_STOP on
-- Everything of the package is named with its schema (public.x) and the path holds only
-- pg_catalog: no search_path a database owner, role or session set can redirect this script.
SET search_path = pg_catalog, pg_temp;

BEGIN;

INSERT INTO public.dot_config AS c (key, value, description)
VALUES ('iu_core.route_worker_enabled', 'false', 'Route worker kill-switch. Only ''true'' opens it.')
ON CONFLICT (key) DO UPDATE SET value = 'false'
 WHERE c.value IS DISTINCT FROM 'false';

COMMIT;

\echo 'route worker disable: worker gate CLOSED'
\x on
SELECT public.fn_iu_route_worker_enabled()                                              AS worker_gate_open,
       (SELECT value FROM public.dot_config WHERE key = 'iu_core.route_worker_enabled') AS worker_gate_value,
       (SELECT updated_at FROM public.dot_config WHERE key = 'iu_core.route_worker_enabled') AS worker_gate_changed_at,
       (SELECT updated_by FROM public.dot_config WHERE key = 'iu_core.route_worker_enabled') AS worker_gate_changed_by,
       public.fn_iu_core_routes_enabled()                                               AS master_gate_open,
       (SELECT count(*) FROM public.iu_route_worker_cursor)                             AS workers_registered;
\x off

\echo 'route worker runs still in progress (finish their current batch, then stop):'
SELECT pid, usename, application_name, state, now() - xact_start AS running_for
  FROM pg_stat_activity
 WHERE datname = current_database()
   AND pid <> pg_backend_pid()
   AND query ILIKE '%fn_iu_route_worker_run%'
   AND state <> 'idle';

\echo 'workers (cursor and counters are kept):'
SELECT worker_name, event_domain, runs_total, events_seen, attempts_written, dead_lettered, last_run_at
  FROM public.iu_route_worker_cursor
 ORDER BY worker_name;
