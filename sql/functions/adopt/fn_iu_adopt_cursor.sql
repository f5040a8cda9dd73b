CREATE OR REPLACE FUNCTION iu_core.fn_iu_adopt_cursor()
RETURNS integer
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_adopt_cursor() -> workers positioned: the first generation's route-worker cursors
    -- (seed migration 008: a keyset (last_created_at, last_event_id) per worker) become the
    -- package's, in place. Each keeps its name, domain, counters and last run; its keyset
    -- stays as "the last event routed" (for people); its position becomes the snapshot the
    -- outbox's adoption recorded (fn_iu_adopt_event_outbox, step 7): every event it audited
    -- is behind it, and the events it never audited are the only ones its first window
    -- holds. The package's columns are added (a lock id, the snapshots, the cluster's id,
    -- the audit columns). Internal.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_t regclass := 'public.iu_route_worker_cursor'::regclass;
    v_n integer;
BEGIN
    PERFORM iu_core.fn_iu_adopt_lock(ARRAY[v_t]);
    PERFORM iu_core.fn_iu_adopt_table('public.iu_route_worker_cursor');
    IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = v_t AND attname = 'created_at' AND NOT attisdropped)
       AND NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = v_t AND attname = 'registered_at' AND NOT attisdropped) THEN
        ALTER TABLE public.iu_route_worker_cursor RENAME COLUMN created_at TO registered_at;
        PERFORM iu_core.fn_iu_adopt_record('public.iu_route_worker_cursor', 'rename',
            'ALTER TABLE public.iu_route_worker_cursor RENAME COLUMN registered_at TO created_at', '{}');
    END IF;
    -- one row per worker: filling an identity column rewrites this small table only
    IF iu_core.fn_iu_adopt_add_column(v_t, 'lock_id', 'integer GENERATED ALWAYS AS IDENTITY') THEN
        ALTER TABLE public.iu_route_worker_cursor ADD CONSTRAINT iu_route_worker_cursor_lock_id_key UNIQUE (lock_id);
    END IF;
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'done_snapshot', 'pg_snapshot');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'window_snapshot', 'pg_snapshot');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'window_txid', 'xid8');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'window_event_id', 'uuid');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'system_identifier', 'bigint');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'events_seen', 'bigint NOT NULL DEFAULT 0');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'attempts_written', 'bigint NOT NULL DEFAULT 0');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'dead_lettered', 'bigint NOT NULL DEFAULT 0');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'runs_total', 'bigint NOT NULL DEFAULT 0');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'last_run_at', 'timestamptz');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'last_run_summary', 'jsonb NOT NULL DEFAULT ''{}''::jsonb');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'registered_at', 'timestamptz NOT NULL DEFAULT now()');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'registered_by', 'text NOT NULL DEFAULT current_user');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'registered_session_user', 'text NOT NULL DEFAULT session_user');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'reset_at', 'timestamptz');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'reset_by', 'text');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'reset_session_user', 'text');
    PERFORM iu_core.fn_iu_adopt_add_check(v_t, 'iu_route_worker_cursor_worker_name_check', $c$worker_name <> ''$c$);
    PERFORM iu_core.fn_iu_adopt_add_check(v_t, 'iu_route_worker_cursor_event_domain_check', $c$event_domain <> ''$c$);
    UPDATE public.iu_route_worker_cursor c
       SET done_snapshot = (a.detail->>'done_snapshot')::pg_snapshot,
           window_snapshot = NULL, window_txid = NULL, window_event_id = NULL,
           system_identifier = (SELECT s.system_identifier FROM pg_control_system() s)
      FROM iu_core.iu_adoption a
     WHERE a.kind = 'position' AND a.object = c.worker_name;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END;
$$;
