-- Undo revision 0028 (run after search--0023.sql, search--0025.sql and search--0026.sql, which
-- restore search_memories and memory_candidates as revision 0027 left them).

DROP FUNCTION memory_similarity(text, text, vector, text, vector, text, vector, text);
