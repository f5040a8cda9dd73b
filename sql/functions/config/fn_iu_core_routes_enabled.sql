CREATE OR REPLACE FUNCTION public.fn_iu_core_routes_enabled()
RETURNS boolean
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    -- The gate readers run with search_path = pg_catalog, pg_temp and name the table and the
    -- rule as public.dot_config and public.fn_iu_gate_open: public is not on their path, so
    -- nothing planted there (an operator, a function, a table) can be resolved by them, and
    -- PostgreSQL never looks up functions or operators in pg_temp. They are PL/pgSQL so they
    -- stay cheap enough to call anywhere: PostgreSQL re-parses and re-plans the body of a
    -- LANGUAGE sql function that cannot be inlined (SECURITY DEFINER, SET) on every call
    -- from a new statement, where PL/pgSQL plans its query once per session. The body stays
    -- one RETURN of one SELECT over public.dot_config, so the runtime verification can lift
    -- that SELECT out and run it against simulated values.
BEGIN
    RETURN (SELECT public.fn_iu_gate_open((SELECT c.value FROM public.dot_config c WHERE c.key = 'iu_core.routes_enabled')));
END;
$$;
