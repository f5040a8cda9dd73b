CREATE OR REPLACE FUNCTION iu_core.fn_queue_executor_kinds()
RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- The executor vocabulary (seven words), in one place: the table's CHECK and
    -- every function that takes an executor kind read it from here.
    SELECT ARRAY['DOT', 'Agent', 'Hermes', 'Codex', 'PG_worker', 'external_worker', 'future_Kestra_adapter']
$$;
