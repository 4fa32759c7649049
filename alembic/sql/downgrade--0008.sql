-- Undo revision 0008: no row-level security, views with their owner's privileges again.

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'working_memories', 'entities', 'mentions', 'relations',
                             'documents', 'chunks', 'retrieval_log'] LOOP
        EXECUTE format('DROP POLICY IF EXISTS user_rows ON %I', t);
        EXECUTE format('DROP POLICY IF EXISTS namespace_rows ON %I', t);
        EXECUTE format('DROP POLICY IF EXISTS all_rows ON %I', t);
        EXECUTE format('ALTER TABLE %I NO FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I DISABLE ROW LEVEL SECURITY', t);
    END LOOP;
    FOR t IN SELECT c.relname FROM pg_class c
             WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'v' LOOP
        EXECUTE format('ALTER VIEW %I RESET (security_invoker)', t);
    END LOOP;
END
$$;

DROP FUNCTION all_rows_requested();
DROP FUNCTION current_rag_namespace();
DROP FUNCTION current_memory_user();
