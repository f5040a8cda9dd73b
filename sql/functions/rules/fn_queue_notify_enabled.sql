CREATE OR REPLACE FUNCTION public.fn_queue_notify_enabled()
RETURNS boolean
LANGUAGE sql STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT coalesce((SELECT c.value = 'true' FROM public.dot_config c WHERE c.key = 'queue.notify.bridge_enabled'), false)
$$;
