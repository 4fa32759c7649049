-- What the baseline adds to the tables of hello_pgmem.db.tables once the functions of sql/ exist:
-- the sequence's owner, constraint comments, the relation types' rules, row-level security and
-- the triggers that keep the text fields, the BM25 statistics and the embedding queue. Run once,
-- by revision 0001, on a new schema, followed by write_path.sql (revision 0002 brings a schema made
-- before to the same state).

ALTER SEQUENCE memories_seq OWNED BY memories.seq;

COMMENT ON CONSTRAINT relations_one_target_at_a_time ON relations IS
    'A single-valued relation holds one target at a time for a subject, as far as the store now knows.';

INSERT INTO relation_types (relation_type, single_valued)
VALUES ('lives_in', true), ('works_at', true), ('married_to', true), ('居住于', true), ('工作于', true);

-- Row-level security: a row of user data is visible, and writable, only inside a transaction that
-- names its user (setting pgmem.user_id); a row of RAG data only inside one that names its
-- namespace (pgmem.namespace). FORCE makes the table owner obey the policies too; superusers and
-- BYPASSRLS roles never do. The policy all_rows lets the roles it names (the owner, and analytics
-- roles added by "hello-pgmem grant") see every row, but only after SET pgmem.all_rows = on.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'working_memories', 'entities', 'mentions', 'relations',
                             'memory_accesses', 'memory_text_totals', 'memory_term_counts',
                             'memory_sessions', 'session_terms', 'access_tokens'] LOOP
        EXECUTE format(
            'CREATE POLICY user_rows ON %I USING (user_id = (SELECT current_memory_user())) '
            'WITH CHECK (user_id = (SELECT current_memory_user()))', t);
    END LOOP;
    FOREACH t IN ARRAY ARRAY['documents', 'chunks', 'chunk_text_totals'] LOOP
        EXECUTE format(
            'CREATE POLICY namespace_rows ON %I USING (namespace = (SELECT current_rag_namespace())) '
            'WITH CHECK (namespace = (SELECT current_rag_namespace()))', t);
    END LOOP;
    CREATE POLICY user_rows ON retrieval_log
        USING (user_id = (SELECT current_memory_user()) OR namespace = (SELECT current_rag_namespace()))
        WITH CHECK (user_id = (SELECT current_memory_user()) OR namespace = (SELECT current_rag_namespace()));
    FOREACH t IN ARRAY ARRAY['memories', 'working_memories', 'entities', 'mentions', 'relations',
                             'memory_accesses', 'memory_text_totals', 'memory_term_counts',
                             'memory_sessions', 'session_terms', 'access_tokens', 'documents', 'chunks',
                             'chunk_text_totals',
                             'retrieval_log'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY all_rows ON %I TO CURRENT_USER USING ((SELECT all_rows_requested())) '
            'WITH CHECK ((SELECT all_rows_requested()))', t);
    END LOOP;
END
$$;
-- A token is looked up by its hash before its user is known (token_identity, as the owner).
CREATE POLICY token_lookup ON access_tokens FOR SELECT TO CURRENT_USER USING (true);
CREATE POLICY token_use ON access_tokens FOR UPDATE TO CURRENT_USER USING (true) WITH CHECK (true);

-- Text fields: a row's text configuration, lexemes and term count, set before it is written.
CREATE TRIGGER memories_text_fields BEFORE INSERT OR UPDATE OF content, text_config ON memories
    FOR EACH ROW EXECUTE FUNCTION _set_text_fields();
CREATE TRIGGER chunks_text_fields BEFORE INSERT OR UPDATE OF content, text_config ON chunks
    FOR EACH ROW EXECUTE FUNCTION _set_text_fields();

-- The BM25 statistics, the sessions and the embedding queue: write_path.sql.

-- The lexical GIN indexes take new rows into a small pending list; an insert of many rows merges it.
CREATE TRIGGER memories_merge_pending_terms AFTER INSERT ON memories REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _merge_pending_terms('memories_user_lexemes');
CREATE TRIGGER chunks_merge_pending_terms AFTER INSERT ON chunks REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _merge_pending_terms('chunks_namespace_lexemes');
