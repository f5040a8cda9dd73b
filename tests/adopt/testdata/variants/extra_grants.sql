-- variant: extra_grants
-- models:  access the DBAs granted over time: a reporting login that may SELECT the log and
--          the reporting view, and a second producer (the kb vector sync) granted INSERT on
--          four columns only (column-level privilege), which is all it writes.
-- adoption: ADOPT.
-- why:     adoption must keep every privilege it finds, table- and column-level. Hazards:
--          013's conversion copies only the table's ACL (pg_class.relacl) to the new parent,
--          not column ACLs (pg_attribute.attacl), so the column-level producer would lose
--          its INSERT; a column-level INSERT also means a new NOT NULL column without a
--          default breaks that producer, and the package's row rules call functions
--          (fn_iu_payload_is_clean, ...) that a direct inserter needs EXECUTE on.
-- check:   SELECT has_table_privilege('iu_reporting', 'event_outbox', 'SELECT') AND has_column_privilege('kb_sync_producer', 'event_outbox', 'safe_payload', 'INSERT') AND NOT has_table_privilege('kb_sync_producer', 'event_outbox', 'INSERT')
DO $$
DECLARE
    v_role text;
BEGIN
    FOREACH v_role IN ARRAY ARRAY['iu_reporting', 'kb_sync_producer'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = v_role) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I LOGIN PASSWORD %L', v_role, v_role);
            EXCEPTION WHEN duplicate_object OR unique_violation THEN
                NULL;
            END;
        END IF;
    END LOOP;
END;
$$;
GRANT SELECT ON event_outbox, v_event_outbox_daily TO iu_reporting;
GRANT INSERT (event_domain, event_type, event_stream, safe_payload) ON event_outbox TO kb_sync_producer;
