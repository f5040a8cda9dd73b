CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_idle_new(p_event_domain text, p_done pg_snapshot)
RETURNS SETOF text
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_idle_new(p_event_domain, p_done): half (b) of the idle path's outbox
    -- question (fn_iu_route_worker_idle_rows): 'new' when the domain holds a row at or above
    -- p_done's xmax that the statement can see (every row a window opened now would claim
    -- in its second range, and every row restored from another cluster), no row otherwise.
    -- A NULL p_done (never run) asks from the first transaction id.
    -- Asked alone by fn_iu_route_worker_run when p_done lists no transaction in progress
    -- (its xmin equals its xmax): half (a), the late commits, then has nothing to find, and
    -- not setting up its scan saves an idle run about 7 % (bench/instr/count.sh).
    -- Bounded below by a value known when the statement starts: the history partitions
    -- below it are pruned before any scan is built.
    -- Internal: inlinable SQL, owner only.
    -- ---------------------------------------------------------------------------------------
    SELECT 'new'
      FROM (SELECT 1 FROM public.event_outbox o
             WHERE o.event_domain = p_event_domain
               AND o.txid >= pg_snapshot_xmax(coalesce(p_done, '1:1:'::pg_snapshot))
             LIMIT 1) b
$$;
