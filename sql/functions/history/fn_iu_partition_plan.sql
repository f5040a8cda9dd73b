CREATE OR REPLACE FUNCTION iu_core.fn_iu_partition_plan(p_top numeric, p_next numeric, p_width bigint)
RETURNS TABLE (lower_txid numeric, upper_txid numeric)
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_partition_plan(p_top, p_next, p_width): THE "how far ahead" rule. The partitions
    -- to add above p_top (the highest upper bound) so that at least two widths of txids are
    -- ready above p_next (the next txid to be assigned): none while p_top - p_next >= 2 *
    -- p_width; else [p_top, greatest(p_top, p_next) + p_width) (wider than a width only when
    -- txids already passed p_top: it covers them), then [u, u + p_width) until the room
    -- reaches two widths. So between two and three widths are ready after every call, and a
    -- partition is added once per width of txids used. Internal.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_lo numeric := p_top;
    v_up numeric;
BEGIN
    WHILE v_lo - p_next < 2 * p_width LOOP
        v_up := greatest(v_lo, p_next) + p_width;
        lower_txid := v_lo;
        upper_txid := v_up;
        RETURN NEXT;
        v_lo := v_up;
    END LOOP;
END;
$$;
