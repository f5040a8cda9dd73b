CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_dead_letter_no_delete()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'fn_iu_route_dead_letter_no_delete: dead letters are resolved, never deleted: % rejected', TG_OP
        USING ERRCODE = 'IU001',
              HINT = 'Replay it (fn_iu_route_dead_letter_replay) or resolve it by setting resolved_at, resolution and resolved_by.';
END;
$$;
