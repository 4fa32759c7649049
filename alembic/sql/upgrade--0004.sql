-- Revision 0004: each live memory's context window stored (memory_contexts, sql/contexts.sql), made
-- again at the commit of every write that changes a window; the statistics count live memories
-- only. Idempotent: a schema that revision 0001 made with this code has the table and columns.

-- The staged memories say where they were and are (empty outside a transaction: NOT NULL holds).
ALTER TABLE memory_stat_changes ADD COLUMN IF NOT EXISTS memory_id uuid NOT NULL;
ALTER TABLE memory_stat_changes ADD COLUMN IF NOT EXISTS created_at timestamptz NOT NULL;
ALTER TABLE memory_stat_changes ADD COLUMN IF NOT EXISTS seq bigint NOT NULL;
ALTER TABLE memory_text_totals ADD COLUMN IF NOT EXISTS contexts_ready boolean NOT NULL DEFAULT true;
COMMENT ON COLUMN memory_text_totals.contexts_ready IS
    'Whether memory_contexts holds every live memory''s window (false while a migration fills them: a '
    'search then reads the windows from memories).';
COMMENT ON TABLE memory_text_totals IS
    'Per user: how many live memories and how many terms they hold, and how many sessions with live '
    'memories and their terms, kept by triggers; BM25 reads the average lengths and the numbers of '
    'documents here.';

-- The windows are user data: row-level security as on every such table.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_policy WHERE polrelid = 'memory_contexts'::regclass AND polname = 'user_rows') THEN
        CREATE POLICY user_rows ON memory_contexts USING (user_id = (SELECT current_memory_user()))
            WITH CHECK (user_id = (SELECT current_memory_user()));
        CREATE POLICY all_rows ON memory_contexts TO CURRENT_USER USING ((SELECT all_rows_requested()))
            WITH CHECK ((SELECT all_rows_requested()));
    END IF;
END $$;
ALTER TABLE memory_contexts ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_contexts FORCE ROW LEVEL SECURITY;

-- A memory that moves in time or changes type is staged too: its window, and its neighbours', change.
CREATE OR REPLACE TRIGGER memories_stat_changes_update
    AFTER UPDATE OF content, text_config, forgotten_at, session_id, created_at, memory_type, embedding,
                    embedding_model ON memories
    FOR EACH ROW WHEN (OLD.lexemes IS DISTINCT FROM NEW.lexemes
                       OR (OLD.forgotten_at IS NULL) <> (NEW.forgotten_at IS NULL)
                       OR OLD.session_id IS DISTINCT FROM NEW.session_id
                       OR OLD.created_at IS DISTINCT FROM NEW.created_at
                       OR OLD.memory_type IS DISTINCT FROM NEW.memory_type
                       OR OLD.embedding_model IS DISTINCT FROM NEW.embedding_model
                       OR OLD.embedding::text IS DISTINCT FROM NEW.embedding::text)
    EXECUTE FUNCTION _stage_memory_change();
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'memories'::regclass
                                              AND tgname = 'memories_contexts_truncate') THEN
        CREATE TRIGGER memories_contexts_truncate AFTER TRUNCATE ON memories
            FOR EACH STATEMENT EXECUTE FUNCTION _clear_terms('memory_contexts');
    END IF;
END $$;

-- The totals of live memories alone.
UPDATE memory_text_totals t
SET memories = coalesce(l.memories, 0), terms = coalesce(l.terms, 0)
FROM memory_text_totals x
LEFT JOIN (SELECT m.user_id, count(*) AS memories, sum(m.term_count) AS terms
           FROM memories m WHERE m.forgotten_at IS NULL GROUP BY 1) AS l ON l.user_id = x.user_id
WHERE x.user_id = t.user_id AND (t.memories, t.terms) IS DISTINCT FROM (coalesce(l.memories, 0), coalesce(l.terms, 0));

-- A user whose live memories have no windows yet waits for them: "hello-pgmem migrate" fills them
-- (fill_memory_contexts), user by user, in batches, after this revision.
UPDATE memory_text_totals t SET contexts_ready = false
WHERE EXISTS (SELECT 1 FROM memories m WHERE m.user_id = t.user_id AND m.forgotten_at IS NULL)
  AND NOT EXISTS (SELECT 1 FROM memory_contexts c WHERE c.user_id = t.user_id);
