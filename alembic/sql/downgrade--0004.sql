-- Undo revision 0004 (runs with search_path set to the hello_pgmem schema).
DROP FUNCTION apply_decay, retention_score;
