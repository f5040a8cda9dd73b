CREATE OR REPLACE FUNCTION iu_core.fn_iu_session_describe(p_pid integer)
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- Who a session is, to name the holder of a lock the package met: its pid and login
    -- (visible to every role), and its application, state and transaction start (visible to
    -- superusers and members of pg_read_all_stats, else NULL). The callers are SECURITY
    -- DEFINER, so "visible" is the package owner's view. A pid with no session any more
    -- (it ended meanwhile) is named with NULLs.
    SELECT coalesce(
        (SELECT jsonb_build_object(
                    'pid', a.pid,
                    'usename', a.usename,
                    'application_name', a.application_name,
                    'state', a.state,
                    'xact_start', a.xact_start,
                    'xact_age_seconds', round(extract(epoch FROM clock_timestamp() - a.xact_start)::numeric, 3))
           FROM pg_catalog.pg_stat_activity a WHERE a.pid = p_pid),
        jsonb_build_object('pid', p_pid, 'usename', NULL, 'application_name', NULL, 'state', NULL,
                           'xact_start', NULL, 'xact_age_seconds', NULL))
$$;
