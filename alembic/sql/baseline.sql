-- What the baseline adds to the tables of hello_pgmem.db.tables once the functions of sql/ exist:
-- the sequence's owner, constraint comments, the relation types' rules, row-level security and
-- the triggers that keep the text fields and the BM25 statistics. Run once, by revision 0001.

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

-- For memories (per user) and chunks (per namespace) alike:
-- * one user's (one namespace's) writes wait for each other from the first (sql/text.sql,
--   lock_writers);
-- * BM25's statistics, rows and terms per user and namespace: inserts and deletes counted per
--   statement, a change of text per row.
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN SELECT * FROM (VALUES ('memories', 'memory_text_totals', 'user_id'),
                                   ('chunks', 'chunk_text_totals', 'namespace')) AS v(tab, totals, key) LOOP
        EXECUTE format('CREATE TRIGGER %1$I BEFORE INSERT OR UPDATE OR DELETE ON %2$I '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _lock_writers(%3$L)',
                       t.tab || '_lock_writers', t.tab, t.totals);
        EXECUTE format('CREATE TRIGGER %1$I AFTER INSERT ON %2$I REFERENCING NEW TABLE AS new_rows '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _count_terms(%3$L, %4$L, %2$L)',
                       t.tab || '_totals_insert', t.tab, t.totals, t.key);
        EXECUTE format('CREATE TRIGGER %1$I AFTER DELETE ON %2$I REFERENCING OLD TABLE AS old_rows '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _count_terms(%3$L, %4$L, %2$L)',
                       t.tab || '_totals_delete', t.tab, t.totals, t.key);
        EXECUTE format('CREATE TRIGGER %1$I AFTER UPDATE OF content, text_config ON %2$I FOR EACH ROW '
                       'WHEN (OLD.term_count IS DISTINCT FROM NEW.term_count) '
                       'EXECUTE FUNCTION _recount_terms(%3$L, %4$L)',
                       t.tab || '_totals_update', t.tab, t.totals, t.key);
        EXECUTE format('CREATE TRIGGER %1$I AFTER TRUNCATE ON %2$I '
                       'FOR EACH STATEMENT EXECUTE FUNCTION _clear_terms(%3$L)',
                       t.tab || '_totals_truncate', t.tab, t.totals);
    END LOOP;
END $$;
-- Per user, the live memories holding each lexeme.
CREATE TRIGGER memories_term_counts_insert AFTER INSERT ON memories REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _count_lexemes();
CREATE TRIGGER memories_term_counts_delete AFTER DELETE ON memories REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _count_lexemes();
CREATE TRIGGER memories_term_counts_update AFTER UPDATE OF content, text_config, forgotten_at ON memories
    FOR EACH ROW WHEN (OLD.lexemes IS DISTINCT FROM NEW.lexemes
                       OR (OLD.forgotten_at IS NULL) <> (NEW.forgotten_at IS NULL))
    EXECUTE FUNCTION _count_lexemes_row();
CREATE TRIGGER memories_term_counts_truncate AFTER TRUNCATE ON memories
    FOR EACH STATEMENT EXECUTE FUNCTION _clear_terms('memory_term_counts');

-- Sessions as documents (sql/sessions.sql): inserts and deletes per statement, changes per row.
CREATE TRIGGER memories_sessions_insert AFTER INSERT ON memories REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _count_sessions();
CREATE TRIGGER memories_sessions_delete AFTER DELETE ON memories REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _count_sessions();
CREATE TRIGGER memories_sessions_update
    AFTER UPDATE OF content, text_config, forgotten_at, session_id, embedding, embedding_model ON memories
    FOR EACH ROW WHEN (OLD.lexemes IS DISTINCT FROM NEW.lexemes
                       OR (OLD.forgotten_at IS NULL) <> (NEW.forgotten_at IS NULL)
                       OR OLD.session_id IS DISTINCT FROM NEW.session_id
                       OR OLD.embedding_model IS DISTINCT FROM NEW.embedding_model
                       OR OLD.embedding::text IS DISTINCT FROM NEW.embedding::text)  -- a cast, not an
                                                                                     -- operator a restore's
                                                                                     -- search_path lacks
    EXECUTE FUNCTION _count_sessions_row();
CREATE TRIGGER memories_sessions_truncate AFTER TRUNCATE ON memories
    FOR EACH STATEMENT EXECUTE FUNCTION _clear_terms('memory_sessions');
CREATE TRIGGER memories_session_terms_truncate AFTER TRUNCATE ON memories
    FOR EACH STATEMENT EXECUTE FUNCTION _clear_terms('session_terms');

-- The lexical GIN indexes take new rows into a small pending list; an insert of many rows merges it.
CREATE TRIGGER memories_merge_pending_terms AFTER INSERT ON memories REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _merge_pending_terms('memories_user_lexemes');
CREATE TRIGGER chunks_merge_pending_terms AFTER INSERT ON chunks REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _merge_pending_terms('chunks_namespace_lexemes');
