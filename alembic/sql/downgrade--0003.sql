-- Undo revision 0003 (runs with search_path set to the hello_pgmem schema).
DROP FUNCTION search_chunks, fts_query_any;
