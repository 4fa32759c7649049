-- What every write to memories and chunks does besides its rows: it stages its changes to the
-- search statistics, applied at its commit (sql/statistics.sql), and queues the rows it left
-- without a vector for the embedding workers (sql/embedding_queue.sql). Run once on a new schema
-- (revision 0001, after baseline.sql), or by revision 0002 on a schema made before it.

-- The queues are user (namespace) data: row-level security as on every such table.
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN SELECT * FROM (VALUES ('memory_embedding_queue', 'user_id', 'current_memory_user'),
                                   ('chunk_embedding_queue', 'namespace', 'current_rag_namespace')) AS v(tab, key, scope) LOOP
        EXECUTE format('CREATE POLICY %3$s ON %1$I USING (%2$I = (SELECT %4$I())) WITH CHECK (%2$I = (SELECT %4$I()))',
                       t.tab, t.key, CASE t.key WHEN 'user_id' THEN 'user_rows' ELSE 'namespace_rows' END, t.scope);
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t.tab);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t.tab);
        EXECUTE format('CREATE POLICY all_rows ON %I TO CURRENT_USER USING ((SELECT all_rows_requested())) '
                       'WITH CHECK ((SELECT all_rows_requested()))', t.tab);
    END LOOP;
END $$;

-- Statistics: inserts and deletes are staged per statement, the rows a statement changes in place
-- per row, and applied once, at commit, by the deferred trigger of the transaction's mark.
CREATE TRIGGER memories_stat_changes_insert AFTER INSERT ON memories REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _stage_memory_rows();
CREATE TRIGGER memories_stat_changes_delete AFTER DELETE ON memories REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _stage_memory_rows();
CREATE TRIGGER memories_stat_changes_update
    AFTER UPDATE OF content, text_config, forgotten_at, session_id, embedding, embedding_model ON memories
    FOR EACH ROW WHEN (OLD.lexemes IS DISTINCT FROM NEW.lexemes
                       OR (OLD.forgotten_at IS NULL) <> (NEW.forgotten_at IS NULL)
                       OR OLD.session_id IS DISTINCT FROM NEW.session_id
                       OR OLD.embedding_model IS DISTINCT FROM NEW.embedding_model
                       OR OLD.embedding::text IS DISTINCT FROM NEW.embedding::text)  -- a cast, not an
                                                                                     -- operator a restore's
                                                                                     -- search_path lacks
    EXECUTE FUNCTION _stage_memory_change();
CREATE TRIGGER chunks_stat_changes_insert AFTER INSERT ON chunks REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _stage_chunk_rows();
CREATE TRIGGER chunks_stat_changes_delete AFTER DELETE ON chunks REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _stage_chunk_rows();
CREATE TRIGGER chunks_stat_changes_update AFTER UPDATE OF content, text_config ON chunks
    FOR EACH ROW WHEN (OLD.term_count IS DISTINCT FROM NEW.term_count)
    EXECUTE FUNCTION _stage_chunk_rows();
CREATE CONSTRAINT TRIGGER stat_changes_apply AFTER INSERT ON stat_changes_pending
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION _apply_stat_changes();

-- A truncate empties the statistics, and what the transaction staged before it.
CREATE TRIGGER memories_stat_changes_truncate AFTER TRUNCATE ON memories
    FOR EACH STATEMENT EXECUTE FUNCTION _unstage_truncated();
CREATE TRIGGER chunks_stat_changes_truncate AFTER TRUNCATE ON chunks
    FOR EACH STATEMENT EXECUTE FUNCTION _unstage_truncated();
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN SELECT * FROM (VALUES ('memories', 'memories_totals_truncate', 'memory_text_totals'),
                                   ('memories', 'memories_term_counts_truncate', 'memory_term_counts'),
                                   ('memories', 'memories_sessions_truncate', 'memory_sessions'),
                                   ('memories', 'memories_session_terms_truncate', 'session_terms'),
                                   ('chunks', 'chunks_totals_truncate', 'chunk_text_totals')) AS v(tab, name, totals) LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = t.tab::regclass AND tgname = t.name) THEN
            EXECUTE format('CREATE TRIGGER %I AFTER TRUNCATE ON %I FOR EACH STATEMENT EXECUTE FUNCTION _clear_terms(%L)',
                           t.name, t.tab, t.totals);
        END IF;
    END LOOP;
END $$;

-- The embedding queue: new rows without a vector, and a memory's new text, are queued; a vector
-- written by another hand takes a row out.
CREATE TRIGGER memories_embedding_queue_insert AFTER INSERT ON memories REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _queue_new_rows();
CREATE TRIGGER chunks_embedding_queue_insert AFTER INSERT ON chunks REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION _queue_new_rows();
CREATE TRIGGER memories_embedding_queue_stale BEFORE UPDATE OF content ON memories
    FOR EACH ROW EXECUTE FUNCTION _drop_stale_vector();
CREATE TRIGGER memories_embedding_queue_update AFTER UPDATE OF content, embedding, embedding_model ON memories
    FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content
                       OR (OLD.embedding IS NULL) <> (NEW.embedding IS NULL)
                       OR OLD.embedding_model IS DISTINCT FROM NEW.embedding_model)
    EXECUTE FUNCTION _requeue_memory();
