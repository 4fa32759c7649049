-- Revision 0002 on a schema made before it: the triggers that applied each statement's statistics
-- at once, under the user's write lock from the first statement on, and their functions, make way
-- for write_path.sql (staged changes applied at commit, the embedding queue).

DROP TRIGGER IF EXISTS memories_lock_writers ON memories;
DROP TRIGGER IF EXISTS chunks_lock_writers ON chunks;
DROP TRIGGER IF EXISTS memories_totals_insert ON memories;
DROP TRIGGER IF EXISTS memories_totals_delete ON memories;
DROP TRIGGER IF EXISTS memories_totals_update ON memories;
DROP TRIGGER IF EXISTS chunks_totals_insert ON chunks;
DROP TRIGGER IF EXISTS chunks_totals_delete ON chunks;
DROP TRIGGER IF EXISTS chunks_totals_update ON chunks;
DROP TRIGGER IF EXISTS memories_term_counts_insert ON memories;
DROP TRIGGER IF EXISTS memories_term_counts_delete ON memories;
DROP TRIGGER IF EXISTS memories_term_counts_update ON memories;
DROP TRIGGER IF EXISTS memories_sessions_insert ON memories;
DROP TRIGGER IF EXISTS memories_sessions_delete ON memories;
DROP TRIGGER IF EXISTS memories_sessions_update ON memories;
DROP FUNCTION IF EXISTS _lock_writers();
DROP FUNCTION IF EXISTS _count_terms();
DROP FUNCTION IF EXISTS _count_lexemes();
DROP FUNCTION IF EXISTS _count_sessions();
DROP FUNCTION IF EXISTS _count_sessions_row();
DROP FUNCTION IF EXISTS _session_moves(text, integer);
DROP FUNCTION IF EXISTS _change_sessions(text[], text[], text[], integer[], bigint[], vector[], integer);
