CREATE OR REPLACE FUNCTION iu_core.fn_iu_search_path_foreign_objects()
RETURNS TABLE (threat text, object text, holder text, fix text)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    -- The verification's half of the scan (W10, with fn_iu_search_path_threats): every
    -- function or operator in public (where callers reach the API, unqualified) or iu_core
    -- (the package's own) that the package did not create, WHOEVER OWNS IT NOW. Ownership
    -- proves nothing about where an object came from: an overload planted while public was
    -- open and later handed to a trusted role (ALTER ... OWNER TO, REASSIGN OWNED) is still a
    -- plant, and a caller's unqualified call can resolve to it. What the package created is
    -- generated from its sources (iu_core.fn_iu_package_functions(), make generate); the
    -- package creates no operator. A function of the list owned by someone else than the
    -- package owner is reported too: it existed before the install (a plant the install's
    -- CREATE OR REPLACE kept the owner of), or was handed away.
    WITH mine AS (
        SELECT pg_catalog.to_regprocedure(s) AS oid FROM pg_catalog.unnest(iu_core.fn_iu_package_functions()) AS s
    )
    SELECT 'foreign_function',
           p.oid::pg_catalog.regprocedure::text || coalesce(' (extension ' || x.extname || ')', ''),
           p.proowner::pg_catalog.regrole::text,
           CASE WHEN x.extname IS NOT NULL
                THEN pg_catalog.format('ALTER EXTENSION %I SET SCHEMA <another schema>;', x.extname)
                ELSE pg_catalog.format('DROP %s %s; -- or move it out: ALTER %s %s SET SCHEMA <another schema>;',
                         CASE p.prokind WHEN 'a' THEN 'AGGREGATE' WHEN 'p' THEN 'PROCEDURE' ELSE 'FUNCTION' END,
                         p.oid::pg_catalog.regprocedure,
                         CASE p.prokind WHEN 'a' THEN 'AGGREGATE' WHEN 'p' THEN 'PROCEDURE' ELSE 'FUNCTION' END,
                         p.oid::pg_catalog.regprocedure) END
      FROM pg_catalog.pg_proc p
      LEFT JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid
                                      AND d.deptype = 'e'
      LEFT JOIN pg_catalog.pg_extension x ON x.oid = d.refobjid
     WHERE p.pronamespace IN ('public'::pg_catalog.regnamespace, 'iu_core'::pg_catalog.regnamespace)
       AND p.oid NOT IN (SELECT m.oid FROM mine m WHERE m.oid IS NOT NULL)
    UNION ALL
    SELECT 'foreign_owner',
           p.oid::pg_catalog.regprocedure::text,
           p.proowner::pg_catalog.regrole::text,
           pg_catalog.format('ALTER FUNCTION %s OWNER TO %s; -- and create it again from its source (sql/functions): its body may not be the package''s',
                             p.oid::pg_catalog.regprocedure, iu_core.fn_iu_package_owner()::pg_catalog.regrole)
      FROM pg_catalog.pg_proc p
      JOIN mine m ON m.oid = p.oid
     WHERE p.proowner <> iu_core.fn_iu_package_owner()
    UNION ALL
    SELECT 'foreign_operator',
           o.oid::pg_catalog.regoperator::text || coalesce(' (extension ' || x.extname || ')', ''),
           o.oprowner::pg_catalog.regrole::text,
           CASE WHEN x.extname IS NOT NULL
                THEN pg_catalog.format('ALTER EXTENSION %I SET SCHEMA <another schema>;', x.extname)
                ELSE pg_catalog.format('DROP OPERATOR %s;', o.oid::pg_catalog.regoperator) END
      FROM pg_catalog.pg_operator o
      LEFT JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_operator'::pg_catalog.regclass AND d.objid = o.oid
                                      AND d.deptype = 'e'
      LEFT JOIN pg_catalog.pg_extension x ON x.oid = d.refobjid
     WHERE o.oprnamespace IN ('public'::pg_catalog.regnamespace, 'iu_core'::pg_catalog.regnamespace)
$$;
