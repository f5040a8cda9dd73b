CREATE OR REPLACE FUNCTION iu_core.fn_iu_event_outbox_package_only(p_event_type text)
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    -- The refusing half of two row rules, called by the outbox's domains only on the branch
    -- where the row breaks the rule for anyone but the package. Whether the writer is the
    -- package: a member of the package owner (as fn_queue_stale_check is when it writes its
    -- alerts and the partition maintenance when it writes partition bounds; superusers are
    -- members of every role). p_event_type: the reserved type being written (iu_event_type):
    -- true for the package, 42501 for anyone else; NULL (iu_txid, a txid that is not the
    -- inserter's): true or false, so the domain refuses with its own constraint (23514). queue_worker_silent and
    -- queue_worker_recovered are the package's own alerts; a producer with INSERT on
    -- event_outbox must not forge them: a fake "silent" or "recovered" would mislead the
    -- people paged by them. The owner is the owner of schema iu_core, read from the catalog by name (a producer,
    -- in whose rights this runs, has no USAGE on iu_core).
    -- The domain's check runs in the writer's rights, and PostgreSQL checks EXECUTE on every
    -- function of a check when a statement starts, even one the row never reaches: a
    -- producer that INSERTs directly is granted EXECUTE on it (as on fn_iu_payload_is_clean).
    IF pg_catalog.pg_has_role(current_user,
                              (SELECT n.nspowner FROM pg_catalog.pg_namespace n WHERE n.nspname = 'iu_core'),
                              'MEMBER') THEN
        RETURN true;
    END IF;
    IF p_event_type IS NULL THEN
        RETURN false;
    END IF;
    RAISE EXCEPTION 'fn_iu_event_outbox_package_only: % events are written only by the package (fn_queue_stale_check)', p_event_type
        USING ERRCODE = '42501',
              HINT = 'queue_worker_silent and queue_worker_recovered are reserved event types in every domain; register your own type for your own alerts (executor silence is reported by fn_queue_stale_check).';
END;
$$;
