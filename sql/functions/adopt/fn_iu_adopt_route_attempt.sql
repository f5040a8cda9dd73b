CREATE OR REPLACE FUNCTION iu_core.fn_iu_adopt_route_attempt()
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_adopt_route_attempt() -> what it did: brings the first generation's audit table
    -- ("migration 002", which the route worker reuses) to the package's shape in place:
    --   - every row kept; the package's columns added: worker_name and route_key (from each
    --     row's detail, else read off its idempotency key iu_wrk:{worker}:{route}:{event}),
    --     error_code and error_message (split from the legacy "<SQLSTATE>: <message>" error,
    --     which stays), event_txid (the txid adoption gave the row's event: 3, or the txid it
    --     re-stamped an owed event with)
    --   - the idempotency keys stay as they are (the package's key is the same string), under
    --     the package's constraint name; built when it is missing and no key occurs twice
    --     (the install plan refuses duplicates)
    --   - id becomes an identity (the serial's sequence goes, the identity continues after it)
    --   - the attempt_no and status CHECKs, and the package's immutability triggers
    -- Nobody else writes the table meanwhile: the first generation's worker was stopped by
    -- the outbox's adoption (003). Records every change for the rollback. Internal.
    -- ---------------------------------------------------------------------------------------
DECLARE
    v_t      regclass := 'public.iu_route_attempt'::regclass;
    v_added  boolean;
    v_next   bigint;
    v_seq    text;
    v_uq     text;
    v_n      bigint;
BEGIN
    PERFORM iu_core.fn_iu_adopt_lock(ARRAY[v_t]);
    PERFORM iu_core.fn_iu_adopt_table('public.iu_route_attempt');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'worker_name', 'text');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'route_key', 'text');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'route_kind', 'text');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'error_code', 'text');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'error_message', 'text');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'detail', 'jsonb NOT NULL DEFAULT ''{}''::jsonb');
    v_added := iu_core.fn_iu_adopt_add_column(v_t, 'event_txid', 'xid8 NOT NULL DEFAULT ''3''');
    IF v_added THEN
        ALTER TABLE public.iu_route_attempt ALTER COLUMN event_txid DROP DEFAULT;
    END IF;
    -- The values of the new columns for the legacy rows (a few rows per routed event).
    UPDATE public.iu_route_attempt a
       SET worker_name = coalesce(a.worker_name, nullif(a.detail->>'worker', ''), split_part(a.idempotency_key, ':', 2)),
           route_key   = coalesce(a.route_key, nullif(a.detail->>'route_key', ''),
                                  nullif(substr(a.idempotency_key, length('iu_wrk:' || split_part(a.idempotency_key, ':', 2) || ':') + 1,
                                                greatest(length(a.idempotency_key) - length('iu_wrk:' || split_part(a.idempotency_key, ':', 2) || ':') - 37, 0)),
                                         'none'))
     WHERE a.worker_name IS NULL AND starts_with(a.idempotency_key, 'iu_wrk:');
    IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = v_t AND attname = 'error' AND NOT attisdropped) THEN
        EXECUTE $upd$
            UPDATE public.iu_route_attempt a
               SET error_code    = CASE WHEN strpos(a.error, ': ') > 0 THEN split_part(a.error, ': ', 1) END,
                   error_message = CASE WHEN strpos(a.error, ': ') > 0 THEN substr(a.error, strpos(a.error, ': ') + 2) ELSE a.error END
             WHERE a.error IS NOT NULL AND a.error_code IS NULL AND a.error_message IS NULL $upd$;
    END IF;
    -- Attempts of the events adoption re-stamped carry their event's txid.
    IF v_added THEN
        UPDATE public.iu_route_attempt a SET event_txid = e.txid
          FROM public.event_outbox e
         WHERE e.id = a.event_ref AND e.txid <> '3'::xid8;
    END IF;

    -- The re-scan guard under its package name (built when missing: the plan refused duplicates).
    SELECT c.conname INTO v_uq FROM pg_constraint c
     WHERE c.conrelid = v_t AND c.contype = 'u'
       AND (SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_attribute a
             WHERE a.attrelid = v_t AND a.attnum = ANY (c.conkey)) = ARRAY['attempt_no', 'idempotency_key'];
    IF v_uq IS NULL THEN
        ALTER TABLE public.iu_route_attempt ADD CONSTRAINT iu_route_attempt_key_attempt_uq UNIQUE (idempotency_key, attempt_no);
        PERFORM iu_core.fn_iu_adopt_record('public.iu_route_attempt', 'check',
            'ALTER TABLE public.iu_route_attempt DROP CONSTRAINT iu_route_attempt_key_attempt_uq', '{}');
    ELSIF v_uq <> 'iu_route_attempt_key_attempt_uq' THEN
        EXECUTE format('ALTER TABLE public.iu_route_attempt RENAME CONSTRAINT %I TO iu_route_attempt_key_attempt_uq', v_uq);
        PERFORM iu_core.fn_iu_adopt_record('public.iu_route_attempt', 'rename',
            format('ALTER TABLE public.iu_route_attempt RENAME CONSTRAINT iu_route_attempt_key_attempt_uq TO %I', v_uq), '{}');
    END IF;

    -- id: a serial becomes the package's identity, continuing after the serial's last value
    -- (the rollback's serial continues after the last id written, the package's included).
    IF (SELECT attidentity FROM pg_attribute WHERE attrelid = v_t AND attname = 'id') = '' THEN
        v_seq := pg_get_serial_sequence('public.iu_route_attempt', 'id');
        SELECT greatest(coalesce(max(id), 0), coalesce((SELECT last_value FROM pg_sequences
                         WHERE format('%I.%I', schemaname, sequencename)::regclass = v_seq::regclass), 0)) + 1
          INTO v_next FROM public.iu_route_attempt;
        PERFORM iu_core.fn_iu_adopt_record('public.iu_route_attempt', 'identity',
            format('ALTER TABLE public.iu_route_attempt ALTER COLUMN id DROP IDENTITY; CREATE SEQUENCE IF NOT EXISTS public.iu_route_attempt_id_seq OWNED BY public.iu_route_attempt.id; ALTER TABLE public.iu_route_attempt ALTER COLUMN id SET DEFAULT nextval(''public.iu_route_attempt_id_seq''); SELECT setval(''public.iu_route_attempt_id_seq'', greatest(%s, (SELECT max(id) FROM public.iu_route_attempt)))', v_next - 1),
            jsonb_build_object('sequence', v_seq));
        ALTER TABLE public.iu_route_attempt ALTER COLUMN id DROP DEFAULT;
        IF v_seq IS NOT NULL THEN
            EXECUTE format('DROP SEQUENCE %s', v_seq);
        END IF;
        EXECUTE format('ALTER TABLE public.iu_route_attempt ALTER COLUMN id ADD GENERATED ALWAYS AS IDENTITY (START WITH %s)', v_next);
    END IF;

    PERFORM iu_core.fn_iu_adopt_add_check(v_t, 'iu_route_attempt_attempt_no_check', 'attempt_no > 0');
    IF NOT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = v_t AND contype = 'c'
                      AND pg_get_constraintdef(oid) LIKE '%status%dry_run%') THEN
        PERFORM iu_core.fn_iu_adopt_add_check(v_t, 'iu_route_attempt_status_check',
                                              $c$status IN ('dry_run', 'disabled', 'skipped', 'failed', 'sent')$c$);
    END IF;
    CREATE TRIGGER trg_iu_route_attempt_immutable
        BEFORE UPDATE OR DELETE ON public.iu_route_attempt
        FOR EACH ROW EXECUTE FUNCTION iu_core.fn_iu_route_attempt_immutable();
    CREATE TRIGGER trg_iu_route_attempt_no_truncate
        BEFORE TRUNCATE ON public.iu_route_attempt
        FOR EACH STATEMENT EXECUTE FUNCTION iu_core.fn_iu_route_attempt_immutable();
    SELECT count(*) INTO v_n FROM public.iu_route_attempt;
    RETURN jsonb_build_object('attempts', v_n, 'identity_start', v_next);
END;
$$;
