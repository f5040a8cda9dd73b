CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_idle_rows(p_event_domain text, p_done pg_snapshot, p_now pg_snapshot)
RETURNS SETOF text
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_idle_rows(p_event_domain, p_done, p_now): the caught-up poll's second
    -- question: a row of the domain that ends it. One row per kind found, none when the
    -- domain holds nothing a window opened at p_now would claim and no row restored from
    -- another cluster. It asks the claim's two questions without its order, keyset and limit,
    -- and is allowed to be stricter than them, never quieter:
    --   (a) late_commit: a transaction in p_done's in-progress list that has completed by
    --       p_now and wrote a row (one index probe per such transaction)
    --   (b) new (fn_iu_route_worker_idle_new below the hot ceiling, fn_iu_route_worker_idle_above
    --       at or above it): any row at or above p_done's xmax that the statement can see
    --       (above the ceiling: below its snapshot's xmax). That is every row the claim's
    --       second range would return (committed before p_now: visible in it). Rows still
    --       being written by producers are not visible and do not count; the caller's own
    --       rows do (the run asks only when its transaction has written nothing). Rows
    --       restored from another cluster with txids beyond this cluster's count below the
    --       ceiling (the full pass then refuses them) and are left to the full pass above it
    --       (fn_iu_route_worker_idle_new and _above say why).
    -- Both halves are bounded by the outbox's hot bound (fn_iu_outbox_hot_txid), as the
    -- caller asks only for a position at or above it.
    -- It may only ever be stricter than the claim: whatever fn_iu_route_worker_claim would
    -- return is found here (a test holds the two together). Every branch bounds txid by
    -- the hot bound (a constant when the statement is planned: the closed partitions are not
    -- in its plan) and by values known when the statement starts, so the partitions outside
    -- those bounds are pruned before any scan is built and the cost stays flat however many
    -- partitions history keeps. When p_done lists no transaction in progress, (a) has nothing to ask: its
    -- upper bound is then 0, below every partition its lower bound keeps, so no scan is
    -- started for it at all (xmin = xmax alone would still leave the partition holding that
    -- one value).
    -- Internal: inlinable SQL, owner only. fn_iu_route_worker_run asks its parts where they are
    -- cheapest (the new rows below the ceiling in its probe, the late commits and the rows
    -- above the ceiling only when the probe says they may exist); the tests ask it whole.
    -- ---------------------------------------------------------------------------------------
    SELECT * FROM iu_core.fn_iu_route_worker_idle_late(p_event_domain, p_done, p_now)
    UNION ALL
    SELECT * FROM iu_core.fn_iu_route_worker_idle_new(p_event_domain, p_done)
    UNION ALL
    SELECT * FROM iu_core.fn_iu_route_worker_idle_above(p_event_domain, p_done)
$$;
