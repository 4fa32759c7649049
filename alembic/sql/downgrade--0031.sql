-- Undo revision 0031: the lexical indexes write through again (revision 0012), their pending
-- lists merged first.
DROP TRIGGER IF EXISTS memories_merge_pending_terms ON memories;  -- not made on Citus
DROP TRIGGER IF EXISTS chunks_merge_pending_terms ON chunks;
DROP FUNCTION _merge_pending_terms();
SELECT gin_clean_pending_list('memories_user_lexemes'::regclass);
SELECT gin_clean_pending_list('chunks_namespace_lexemes'::regclass);
ALTER INDEX memories_user_lexemes RESET (gin_pending_list_limit);
ALTER INDEX chunks_namespace_lexemes RESET (gin_pending_list_limit);
ALTER INDEX memories_user_lexemes SET (fastupdate = off);
ALTER INDEX chunks_namespace_lexemes SET (fastupdate = off);
