CREATE OR REPLACE FUNCTION public.fn_iu_gate_open(p_value text)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    -- fn_iu_gate_open(p_value): THE gate rule, written once: a gate is open only when its key
    -- holds exactly 'true' (p_value is the stored value, NULL when the key is missing). Pure
    -- and inlinable SQL, so a reader or a run's idle probe plans it into its own statement.
    SELECT coalesce(p_value = 'true', false)
$$;
