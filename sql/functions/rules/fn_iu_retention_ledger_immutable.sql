CREATE OR REPLACE FUNCTION iu_core.fn_iu_retention_ledger_immutable()
RETURNS trigger
LANGUAGE plpgsql
AS $$
BEGIN
    RAISE EXCEPTION 'fn_iu_retention_ledger_immutable: iu_retention_ledger is append-only: % rejected', TG_OP
        USING ERRCODE = 'IU001',
              HINT = 'The ledger is the evidence of what retention removed; it is never changed or removed.';
END;
$$;
