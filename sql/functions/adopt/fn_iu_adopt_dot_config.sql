CREATE OR REPLACE FUNCTION iu_core.fn_iu_adopt_dot_config()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- fn_iu_adopt_dot_config(): the first generation's dot_config in the package's shape, in
    -- place: every key and value kept (the gates read as they did); description and
    -- updated_by added. Migration 006 then adds the package's trigger and the keys it lacks
    -- (never overwriting one). hc_executor_last_run becomes a heartbeat row with the heartbeat
    -- table (migration 008). Internal.
DECLARE
    v_t regclass := 'public.dot_config'::regclass;
BEGIN
    PERFORM iu_core.fn_iu_adopt_lock(ARRAY[v_t]);
    PERFORM iu_core.fn_iu_adopt_table('public.dot_config',
        jsonb_build_object('keys', (SELECT coalesce(jsonb_agg(key ORDER BY key), '[]') FROM public.dot_config)));
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'description', 'text NOT NULL DEFAULT ''''');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'updated_at', 'timestamptz NOT NULL DEFAULT now()');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'updated_by', 'text NOT NULL DEFAULT current_user');
END;
$$;
