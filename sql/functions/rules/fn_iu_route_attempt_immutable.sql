CREATE OR REPLACE FUNCTION iu_core.fn_iu_route_attempt_immutable()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'fn_iu_route_attempt_immutable: iu_route_attempt is an audit log: % rejected', TG_OP
        USING ERRCODE = 'IU001',
              HINT = 'Audit rows are never changed or removed; a replay writes a new attempt.';
END;
$$;
