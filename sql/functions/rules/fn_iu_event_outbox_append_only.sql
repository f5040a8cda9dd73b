CREATE OR REPLACE FUNCTION iu_core.fn_iu_event_outbox_append_only()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    -- The one sanctioned change: fn_iu_event_outbox_rebase_foreign_txids re-stamps the
    -- txid bookkeeping column of rows restored from another cluster. It sets this flag for
    -- its own transaction only, and nothing but txid may differ.
    IF TG_OP = 'UPDATE' AND current_setting('iu.rebase_txid', true) = 'on'
       AND (to_jsonb(NEW) - 'txid') = (to_jsonb(OLD) - 'txid') THEN
        RETURN NEW;
    END IF;
    -- Its row-moving half: event_outbox is partitioned by txid, so re-stamping a row's
    -- txid moves it to another partition, which PostgreSQL performs as a DELETE from the old
    -- partition (firing BEFORE UPDATE, checked above, then BEFORE DELETE there) plus an
    -- INSERT. Allowed only inside a rebase, and only for a row whose txid lies ahead of this
    -- cluster (the only rows a rebase touches).
    IF TG_OP = 'DELETE' AND current_setting('iu.rebase_txid', true) = 'on'
       AND OLD.txid >= pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot()) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'fn_iu_event_outbox_append_only: event_outbox is append-only: % rejected', TG_OP
        USING ERRCODE = 'IU001',
              HINT = 'Emit a new event (fn_iu_emit_event) instead of changing or removing one.';
END;
$$;
