CREATE OR REPLACE FUNCTION iu_core.fn_iu_search_path_threats()
RETURNS TABLE (threat text, object text, holder text, fix text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- The full scan (the install's refusal and the runtime verification's W10): who may
    -- CREATE in public, and which functions and operators in public belong to an untrusted
    -- role (an overload planted while the schema was open stays dangerous after CREATE is
    -- revoked).
    SELECT * FROM iu_core.fn_iu_search_path_create_threats()
    UNION ALL
    SELECT 'function', p.oid::pg_catalog.regprocedure::text, p.proowner::pg_catalog.regrole::text,
           pg_catalog.format('DROP %s %s;', CASE p.prokind WHEN 'a' THEN 'AGGREGATE' WHEN 'p' THEN 'PROCEDURE' ELSE 'FUNCTION' END,
                             p.oid::pg_catalog.regprocedure)
      FROM pg_catalog.pg_proc p
     WHERE p.pronamespace = 'public'::pg_catalog.regnamespace
       AND EXISTS (SELECT 1 FROM iu_core.fn_iu_untrusted_roles(ARRAY[p.proowner]))
    UNION ALL
    SELECT 'operator', o.oid::pg_catalog.regoperator::text, o.oprowner::pg_catalog.regrole::text,
           pg_catalog.format('DROP OPERATOR %s;', o.oid::pg_catalog.regoperator)
      FROM pg_catalog.pg_operator o
     WHERE o.oprnamespace = 'public'::pg_catalog.regnamespace
       AND EXISTS (SELECT 1 FROM iu_core.fn_iu_untrusted_roles(ARRAY[o.oprowner]))
$$;
