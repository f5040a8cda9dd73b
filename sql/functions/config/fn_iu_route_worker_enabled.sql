CREATE OR REPLACE FUNCTION public.fn_iu_route_worker_enabled()
RETURNS boolean
LANGUAGE plpgsql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RETURN (SELECT public.fn_iu_gate_open((SELECT c.value FROM public.dot_config c WHERE c.key = 'iu_core.route_worker_enabled')));
END;
$$;
