-- Undo revision 0015 after search--0007.sql has restored memory_candidates (ef_search 2 x the pool).
DROP FUNCTION hnsw_ef_search(text, integer, text);
