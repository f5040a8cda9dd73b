CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_event(p_event_id uuid)
RETURNS jsonb
LANGUAGE sql STABLE
AS $$
    -- ---------------------------------------------------------------------------------------
    -- fn_iu_route_event(p_event_id) -> jsonb: THE event of an id, as the whole row (NULL when
    -- no row has that id). An id is unique only within a history partition, so a
    -- producer allowed to choose ids could store a second row under an id it learned; the
    -- event is the oldest row of the id (a copy is always younger: it can only be written
    -- after the original committed), never whichever row an index scan meets first. The
    -- failure path (the dead letter's snapshot) and the delivery path read the event through
    -- it, once per event. Internal.
    -- ---------------------------------------------------------------------------------------
    SELECT to_jsonb(e) FROM public.event_outbox e WHERE e.id = p_event_id ORDER BY e.txid LIMIT 1
$$;
