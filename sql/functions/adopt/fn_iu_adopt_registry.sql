CREATE OR REPLACE FUNCTION iu_core.fn_iu_adopt_registry()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- fn_iu_adopt_registry(): the first generation's event_type_registry in the package's
    -- shape, in place: every registration kept (its own columns too); description,
    -- registered_at and registered_by added (a legacy NULL description becomes ''); the name
    -- rules on domain and type added for new registrations (legacy ones are not re-checked).
    -- Migration 005 then registers the package's two alert types. Internal.
DECLARE
    v_t regclass := 'public.event_type_registry'::regclass;
BEGIN
    PERFORM iu_core.fn_iu_adopt_lock(ARRAY[v_t]);
    PERFORM iu_core.fn_iu_adopt_table('public.event_type_registry',
        jsonb_build_object('had_alert_types', EXISTS (SELECT 1 FROM public.event_type_registry
                                                       WHERE event_domain = 'system' AND event_type IN ('queue_worker_silent', 'queue_worker_recovered'))));
    IF NOT iu_core.fn_iu_adopt_add_column(v_t, 'description', 'text NOT NULL DEFAULT ''''') THEN
        IF EXISTS (SELECT 1 FROM public.event_type_registry WHERE description IS NULL) THEN
            UPDATE public.event_type_registry SET description = '' WHERE description IS NULL;
        END IF;
        IF (SELECT NOT attnotnull FROM pg_attribute WHERE attrelid = v_t AND attname = 'description') THEN
            ALTER TABLE public.event_type_registry ALTER COLUMN description SET DEFAULT '', ALTER COLUMN description SET NOT NULL;
            PERFORM iu_core.fn_iu_adopt_record('public.event_type_registry', 'column_rule',
                'ALTER TABLE public.event_type_registry ALTER COLUMN description DROP NOT NULL, ALTER COLUMN description DROP DEFAULT', '{}');
        END IF;
    END IF;
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'registered_at', 'timestamptz NOT NULL DEFAULT now()');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'registered_by', 'text NOT NULL DEFAULT current_user');
    PERFORM iu_core.fn_iu_adopt_add_check(v_t, 'event_type_registry_domain_is_name',
        'NOT iu_core.fn_iu_is_blank(event_domain) AND octet_length(event_domain) <= 200', false);
    PERFORM iu_core.fn_iu_adopt_add_check(v_t, 'event_type_registry_type_is_name',
        'NOT iu_core.fn_iu_is_blank(event_type) AND octet_length(event_type) <= 200', false);
END;
$$;
