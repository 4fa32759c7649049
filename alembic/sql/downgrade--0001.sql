-- Everything hello_pgmem made in the schema, but Alembic's version table: the views, the tables
-- (their indexes, triggers, policies and owned sequences go with them), the composite types, the
-- functions, and the record of the applied sql/ files. The extensions stay: other applications may
-- share them. An object that an earlier DROP … CASCADE took already is passed over.
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT c.oid, c.relkind FROM pg_class c
             WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('v', 'r', 'p', 'S', 'c')
               AND c.relname <> 'alembic_version'
             ORDER BY c.relkind = 'S', c.relkind <> 'v' LOOP
        IF EXISTS (SELECT 1 FROM pg_class WHERE oid = r.oid) THEN
            EXECUTE format('DROP %s %s CASCADE',
                           CASE r.relkind WHEN 'v' THEN 'VIEW' WHEN 'S' THEN 'SEQUENCE' WHEN 'c' THEN 'TYPE'
                                          ELSE 'TABLE' END,
                           r.oid::regclass);
        END IF;
    END LOOP;
    FOR r IN SELECT p.oid FROM pg_proc p WHERE p.pronamespace = current_schema()::regnamespace LOOP
        IF EXISTS (SELECT 1 FROM pg_proc WHERE oid = r.oid) THEN
            EXECUTE format('DROP FUNCTION %s CASCADE', r.oid::regprocedure);
        END IF;
    END LOOP;
END
$$;
