CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_worker_cursor_ahead(p_cursor public.iu_route_worker_cursor)
RETURNS boolean
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_worker_cursor_ahead: the half of the cursor sanity rule that needs no file
    -- read: a stored snapshot or keyset position lies at or beyond this cluster's next
    -- transaction id (no transaction of this cluster can have produced it). True when so;
    -- false when not, or when the cursor holds no position yet.
    -- Part of fn_iu_route_worker_cursor_check; the run's idle probe asks it alone (see there).
    -- Inlinable SQL (a scalar expression, so it costs its callers no subplan), owner only.
    -- ---------------------------------------------------------------------------------------
    -- (greatest: the two snapshots' test in one comparison; it skips a NULL as OR does. Every
    -- function call costs the idle probe, which plans this into each poll, a lookup and a
    -- privilege check when its statement starts.)
    SELECT coalesce(greatest(pg_snapshot_xmax(p_cursor.done_snapshot), pg_snapshot_xmax(p_cursor.window_snapshot))
                    > pg_snapshot_xmax(pg_current_snapshot())
                    OR p_cursor.window_txid >= pg_snapshot_xmax(pg_current_snapshot()), false)
$$;
