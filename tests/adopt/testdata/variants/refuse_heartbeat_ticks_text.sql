-- variant: refuse_heartbeat_ticks_text
-- models:  a queue_heartbeat whose ticks_total is text (the table was created from a
--          spreadsheet export of the DP4 sketch), with a tick primitive that casts back and
--          forth, and one row whose counter is not a number at all.
-- adoption: REFUSE.
-- why:     ticks_total is the counter the package adds to (spec §5: "fn_queue_heartbeat_tick
--          ... → jsonb with ticks_total") and reports; the package's column is bigint. A
--          text column can hold values no cast accepts ('n/a' here), and converting it is a
--          rewrite whose outcome depends on the data. Adoption does not guess: refuse,
--          naming the column, its type and the fix (ALTER ... TYPE bigint USING ...).
-- check:   SELECT format_type(atttypid, atttypmod) = 'text' FROM pg_attribute WHERE attrelid = 'queue_heartbeat'::regclass AND attname = 'ticks_total'
ALTER TABLE queue_heartbeat ALTER COLUMN ticks_total DROP DEFAULT;
ALTER TABLE queue_heartbeat ALTER COLUMN ticks_total TYPE text USING ticks_total::text;
ALTER TABLE queue_heartbeat ALTER COLUMN ticks_total SET DEFAULT '0';
UPDATE queue_heartbeat SET ticks_total = 'n/a' WHERE executor_name = 'dieu45_phase3_pilot';

CREATE OR REPLACE FUNCTION fn_queue_heartbeat_tick(
    p_executor_name text,
    p_executor_kind text,
    p_status        text  DEFAULT 'ok',
    p_metadata      jsonb DEFAULT '{}'::jsonb
)
RETURNS jsonb
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = public, pg_temp
AS $$
DECLARE
    h queue_heartbeat%ROWTYPE;
BEGIN
    INSERT INTO queue_heartbeat AS q (executor_name, executor_kind, status, last_tick_at, ticks_total, metadata)
    VALUES (p_executor_name, p_executor_kind, coalesce(p_status, 'ok'), now(), '1', coalesce(p_metadata, '{}'::jsonb))
    ON CONFLICT (executor_name) DO UPDATE
       SET executor_kind = EXCLUDED.executor_kind,
           status        = EXCLUDED.status,
           last_tick_at  = EXCLUDED.last_tick_at,
           ticks_total   = CASE WHEN q.ticks_total ~ '^[0-9]+$' THEN (q.ticks_total::bigint + 1)::text ELSE '1' END,
           metadata      = EXCLUDED.metadata
    RETURNING q.* INTO h;
    RETURN jsonb_build_object('ok', true, 'executor_name', h.executor_name, 'executor_kind', h.executor_kind,
                              'status', h.status, 'last_tick_at', h.last_tick_at, 'ticks_total', h.ticks_total);
END;
$$;
