CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_dead_letter_matches(d public.iu_route_dead_letter, p_route_key text, p_error_code text,
                                                p_failed_after timestamptz, p_failed_before timestamptz)
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    SELECT (p_route_key IS NULL OR d.route_key = p_route_key)
       AND (p_error_code IS NULL OR d.error_code = p_error_code)
       AND (p_failed_after IS NULL OR d.last_failed_at >= p_failed_after)
       AND (p_failed_before IS NULL OR d.last_failed_at < p_failed_before)
$$;
