CREATE OR REPLACE FUNCTION public.fn_iu_event_outbox_rebase_foreign_txids()
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '5s'
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_event_outbox_rebase_foreign_txids: the documented fix for rows restored from
    -- another cluster (IU002 "transaction ids from another cluster"). Re-stamps their txid with
    -- this transaction's, so they become one new window for every worker once it commits; the
    -- idempotency keys keep the ones already routed in the old cluster duplicate-free. Only the
    -- txid bookkeeping column changes (the append-only trigger checks that).
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_me   xid8;
    v_rows bigint;
    v_doms jsonb;
BEGIN
    v_me := pg_current_xact_id();
    PERFORM set_config('iu.rebase_txid', 'on', true);
    WITH moved AS (
        UPDATE public.event_outbox o
           SET txid = v_me
         WHERE o.txid >= pg_snapshot_xmax(pg_current_snapshot())
           AND o.txid <> v_me
        RETURNING o.event_domain
    )
    SELECT count(*), coalesce(jsonb_object_agg(m.event_domain, m.n), '{}'::jsonb)
      INTO v_rows, v_doms
      FROM (SELECT event_domain, count(*) AS n FROM moved GROUP BY event_domain) m;
    PERFORM set_config('iu.rebase_txid', 'off', true);
    RETURN jsonb_build_object('rebased', coalesce(v_rows, 0), 'by_domain', v_doms, 'txid', v_me::text,
                              'note', 'the rows are routed as one new window once this transaction commits');
END;
$$;
