CREATE OR REPLACE FUNCTION iu_core.fn_queue_wake_notify_job_queue()
RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r         record;
    v_payload text;
BEGIN
    -- The enabled test comes first so a disabled bridge costs one call per statement (and
    -- normally none: a closed gate drops this trigger).
    IF NOT public.fn_queue_notify_enabled() THEN
        RETURN NULL;
    END IF;
    FOR r IN
        SELECT n.event_domain,
               count(*)                        AS cnt,
               (array_agg(n.job_id))[1]        AS first_id,
               (array_agg(n.job_id))[count(*)] AS last_id,
               min(n.job_kind)                 AS job_kind,
               array_agg(DISTINCT n.job_kind)  AS job_kinds,
               min(n.process_after)            AS process_after
          FROM new_rows n
         WHERE octet_length(n.event_domain) <= 52
         GROUP BY n.event_domain
    LOOP
        IF r.cnt = 1 THEN
            v_payload := jsonb_build_object('layer', 'job', 'job_id', r.first_id, 'job_kind', r.job_kind,
                                            'process_after', r.process_after)::text;
            IF octet_length(v_payload) > 7900 THEN
                -- pg_notify refuses payloads of 8000 bytes or more: cut the long field
                v_payload := jsonb_build_object('layer', 'job', 'job_id', r.first_id, 'event_domain', r.event_domain,
                                                'job_kind', left(r.job_kind, 200),
                                                'process_after', r.process_after, 'truncated', true)::text;
            END IF;
        ELSE
            v_payload := jsonb_build_object('layer', 'job', 'event_domain', r.event_domain, 'count', r.cnt,
                                            'first_job_id', r.first_id, 'last_job_id', r.last_id,
                                            'job_kinds', to_jsonb(r.job_kinds[1:20]),
                                            'first_process_after', r.process_after)::text;
            IF octet_length(v_payload) > 7900 THEN
                -- long kinds: name each by its first 200 characters (still <= 20 of them)
                v_payload := jsonb_build_object('layer', 'job', 'event_domain', r.event_domain, 'count', r.cnt,
                                                'first_job_id', r.first_id, 'last_job_id', r.last_id,
                                                'job_kinds', (SELECT coalesce(jsonb_agg(left(k, 200)), '[]'::jsonb)
                                                                FROM unnest(r.job_kinds[1:20]) AS k),
                                                'first_process_after', r.process_after, 'truncated', true)::text;
                IF octet_length(v_payload) > 7900 THEN   -- multibyte kinds: drop the list
                    v_payload := (v_payload::jsonb - 'job_kinds')::text;
                END IF;
            END IF;
        END IF;
        PERFORM pg_notify('queue_wake_' || r.event_domain, v_payload);
    END LOOP;
    RETURN NULL;
END;
$$;
