CREATE OR REPLACE FUNCTION iu_core.fn_iu_adopt_outbound_route()
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
    -- fn_iu_adopt_outbound_route(): the first generation's routes in the package's shape, in
    -- place: every route kept with its id (a uuid there: the package never reads a route's
    -- id); description added; the route_key rule (non-blank, not 'none', at most 200 bytes)
    -- for new routes; the one-route-per-(domain, type, stream) key under the package's name.
    -- Internal.
DECLARE
    v_t  regclass := 'public.iu_outbound_route'::regclass;
    v_uq text;
BEGIN
    PERFORM iu_core.fn_iu_adopt_lock(ARRAY[v_t]);
    PERFORM iu_core.fn_iu_adopt_table('public.iu_outbound_route');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'route_kind', 'text NOT NULL DEFAULT ''outbound''');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'description', 'text NOT NULL DEFAULT ''''');
    PERFORM iu_core.fn_iu_adopt_add_column(v_t, 'created_at', 'timestamptz NOT NULL DEFAULT now()');
    PERFORM iu_core.fn_iu_adopt_add_check(v_t, 'iu_outbound_route_route_key_check',
        $c$NOT iu_core.fn_iu_is_blank(route_key) AND route_key <> 'none' AND octet_length(route_key) <= 200$c$, false);
    SELECT c.conname INTO v_uq FROM pg_constraint c
     WHERE c.conrelid = v_t AND c.contype = 'u'
       AND (SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_attribute a
             WHERE a.attrelid = v_t AND a.attnum = ANY (c.conkey)) = ARRAY['event_domain', 'event_stream', 'event_type'];
    IF v_uq IS NULL THEN
        ALTER TABLE public.iu_outbound_route ADD CONSTRAINT iu_outbound_route_match_uq UNIQUE (event_domain, event_type, event_stream);
        PERFORM iu_core.fn_iu_adopt_record('public.iu_outbound_route', 'check',
            'ALTER TABLE public.iu_outbound_route DROP CONSTRAINT iu_outbound_route_match_uq', '{}');
    ELSIF v_uq <> 'iu_outbound_route_match_uq' THEN
        EXECUTE format('ALTER TABLE public.iu_outbound_route RENAME CONSTRAINT %I TO iu_outbound_route_match_uq', v_uq);
        PERFORM iu_core.fn_iu_adopt_record('public.iu_outbound_route', 'rename',
            format('ALTER TABLE public.iu_outbound_route RENAME CONSTRAINT iu_outbound_route_match_uq TO %I', v_uq), '{}');
    END IF;
END;
$$;
