-- Row-level security: a row of user data is visible, and writable, only inside a transaction that
-- names its user (setting pgmem.user_id); a row of RAG data only inside one that names its
-- namespace (pgmem.namespace). The library sets both with SET LOCAL semantics per transaction.
-- FORCE makes the table owner obey the policies too; superusers and BYPASSRLS roles never do.
-- The policy "all_rows" lets the roles it names (the owner, and analytics roles added by
-- "hello-pgmem grant") see every row, but only after SET pgmem.all_rows = on. See docs/security.md.

CREATE FUNCTION current_memory_user() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT nullif(current_setting('pgmem.user_id', true), '') $$;
COMMENT ON FUNCTION current_memory_user() IS
    'The user this transaction works for (setting pgmem.user_id), NULL when none is set.';

CREATE FUNCTION current_rag_namespace() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT nullif(current_setting('pgmem.namespace', true), '') $$;
COMMENT ON FUNCTION current_rag_namespace() IS
    'The RAG namespace this transaction works in (setting pgmem.namespace), NULL when none is set.';

CREATE FUNCTION all_rows_requested() RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE
AS $$ SELECT coalesce(current_setting('pgmem.all_rows', true), '') = 'on' $$;
COMMENT ON FUNCTION all_rows_requested() IS
    'Whether this session asked for every user''s rows (SET pgmem.all_rows = on); only roles named '
    'by the all_rows policies get them.';

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'working_memories', 'entities', 'mentions', 'relations'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY user_rows ON %I USING (user_id = (SELECT current_memory_user())) '
            'WITH CHECK (user_id = (SELECT current_memory_user()))', t);
    END LOOP;
    FOREACH t IN ARRAY ARRAY['documents', 'chunks'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY namespace_rows ON %I USING (namespace = (SELECT current_rag_namespace())) '
            'WITH CHECK (namespace = (SELECT current_rag_namespace()))', t);
    END LOOP;
    ALTER TABLE retrieval_log ENABLE ROW LEVEL SECURITY;
    ALTER TABLE retrieval_log FORCE ROW LEVEL SECURITY;
    CREATE POLICY user_rows ON retrieval_log
        USING (user_id = (SELECT current_memory_user()) OR namespace = (SELECT current_rag_namespace()))
        WITH CHECK (user_id = (SELECT current_memory_user()) OR namespace = (SELECT current_rag_namespace()));
    FOREACH t IN ARRAY ARRAY['memories', 'working_memories', 'entities', 'mentions', 'relations',
                             'documents', 'chunks', 'retrieval_log'] LOOP
        EXECUTE format(
            'CREATE POLICY all_rows ON %I TO CURRENT_USER USING ((SELECT all_rows_requested())) '
            'WITH CHECK ((SELECT all_rows_requested()))', t);
    END LOOP;
    -- Views run with the privileges and policies of whoever queries them, not of their owner.
    FOR t IN SELECT c.relname FROM pg_class c
             WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'v' LOOP
        EXECUTE format('ALTER VIEW %I SET (security_invoker = true)', t);
    END LOOP;
END
$$;
