-- Down from revision 0004: no stored windows; the totals count forgotten memories again, as the
-- statistics of revision 0003 did.
DROP TRIGGER IF EXISTS memories_contexts_truncate ON memories;
CREATE OR REPLACE TRIGGER memories_stat_changes_update
    AFTER UPDATE OF content, text_config, forgotten_at, session_id, embedding, embedding_model ON memories
    FOR EACH ROW WHEN (OLD.lexemes IS DISTINCT FROM NEW.lexemes
                       OR (OLD.forgotten_at IS NULL) <> (NEW.forgotten_at IS NULL)
                       OR OLD.session_id IS DISTINCT FROM NEW.session_id
                       OR OLD.embedding_model IS DISTINCT FROM NEW.embedding_model
                       OR OLD.embedding::text IS DISTINCT FROM NEW.embedding::text)
    EXECUTE FUNCTION _stage_memory_change();
DROP TABLE IF EXISTS memory_contexts;
ALTER TABLE memory_text_totals DROP COLUMN IF EXISTS contexts_ready;
ALTER TABLE memory_stat_changes DROP COLUMN IF EXISTS memory_id, DROP COLUMN IF EXISTS created_at,
                                DROP COLUMN IF EXISTS seq;
UPDATE memory_text_totals t
SET memories = coalesce(l.memories, 0), terms = coalesce(l.terms, 0)
FROM memory_text_totals x
LEFT JOIN (SELECT m.user_id, count(*) AS memories, sum(m.term_count) AS terms FROM memories m GROUP BY 1) AS l
    ON l.user_id = x.user_id
WHERE x.user_id = t.user_id AND (t.memories, t.terms) IS DISTINCT FROM (coalesce(l.memories, 0), coalesce(l.terms, 0));
