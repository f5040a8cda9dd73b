CREATE OR REPLACE FUNCTION iu_core.fn_queue_wake_notify_event_outbox()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
    e record;
    v_payload text;
BEGIN
    -- The enabled test comes first so a disabled bridge costs one call per statement (and
    -- normally none: a closed gate drops this trigger).
    IF NOT public.fn_queue_notify_enabled() THEN
        RETURN NULL;
    END IF;
    -- One pass over the statement's rows: cheap aggregates only (no sorts, no collations).
    FOR r IN
        SELECT n.event_domain,
               count(*)                    AS cnt,
               (array_agg(n.id))[1]        AS first_id,
               (array_agg(n.id))[count(*)] AS last_id,
               bool_or(n.delivery_lane = 'immediate') AS has_immediate,
               bool_or(n.delivery_lane = 'standard')  AS has_standard,
               bool_or(n.delivery_lane = 'batch')     AS has_batch
          FROM new_rows n
         WHERE octet_length(n.event_domain) <= 52   -- 'queue_wake_' + domain <= 63 bytes
         GROUP BY n.event_domain
    LOOP
        IF r.cnt = 1 THEN
            SELECT n.event_type, n.delivery_lane, n.occurred_at INTO e FROM new_rows n WHERE n.id = r.first_id;
            v_payload := jsonb_build_object('layer', 'event', 'event_id', r.first_id, 'event_domain', r.event_domain,
                                            'event_type', e.event_type, 'lane', e.delivery_lane,
                                            'occurred_at', e.occurred_at)::text;
            IF octet_length(v_payload) > 7900 THEN
                -- pg_notify refuses payloads of 8000 bytes or more: the long field is cut to
                -- 200 characters and the signal says so (the row itself is read from the table).
                v_payload := jsonb_build_object('layer', 'event', 'event_id', r.first_id, 'event_domain', r.event_domain,
                                                'event_type', left(e.event_type, 200), 'lane', e.delivery_lane,
                                                'occurred_at', e.occurred_at, 'truncated', true)::text;
            END IF;
        ELSE
            -- bounded: ids, a domain of <= 52 bytes and at most three lanes
            v_payload := jsonb_build_object('layer', 'event', 'event_domain', r.event_domain, 'count', r.cnt,
                                            'first_event_id', r.first_id, 'last_event_id', r.last_id,
                                            'lanes', to_jsonb(array_remove(ARRAY[
                                                 CASE WHEN r.has_immediate THEN 'immediate' END,
                                                 CASE WHEN r.has_standard THEN 'standard' END,
                                                 CASE WHEN r.has_batch THEN 'batch' END], NULL)))::text;
        END IF;
        PERFORM pg_notify('queue_wake_' || r.event_domain, v_payload);
    END LOOP;
    RETURN NULL;
END;
$$;
