CREATE OR REPLACE FUNCTION iu_core.fn_iu_history_blockers(p_relations regclass[])
RETURNS jsonb
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_history_blockers(p_relations) -> jsonb: the sessions (at most 5, oldest
    -- transaction first) that hold a lock on one of p_relations now: [{pid, login,
    -- application_name, relation, mode, xact_age_seconds}]. What a lock_timeout answer of
    -- maintenance or retention names: who kept it from its locks (best effort, read right
    -- after it gave up). Internal.
    -- ---------------------------------------------------------------------------------------
    SELECT coalesce(jsonb_agg(b.doc ORDER BY b.xact_start NULLS LAST, b.pid), '[]'::jsonb)
      FROM (SELECT DISTINCT ON (l.pid) l.pid, a.xact_start,
                   jsonb_build_object('pid', l.pid, 'login', a.usename, 'application_name', a.application_name,
                                      'relation', l.relation::regclass::text, 'mode', l.mode,
                                      'xact_age_seconds', floor(extract(epoch FROM clock_timestamp() - a.xact_start))::bigint) AS doc
              FROM pg_locks l
              LEFT JOIN pg_stat_activity a ON a.pid = l.pid
             WHERE l.locktype = 'relation'
               AND l.database = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
               AND l.relation = ANY (p_relations)
               AND l.granted
               AND l.pid IS DISTINCT FROM pg_backend_pid()
             ORDER BY l.pid, l.relation
             LIMIT 5) b
$$;
