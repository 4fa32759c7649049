-- Revision 0027: a chunk's row stays whole up to a page, as a memory's does since revision 0024.
-- A RAG chunk with its 384-d vector and lexemes is several kB, over the 2 kB at which PostgreSQL
-- moves a row's largest values to the TOAST table: every search that scored a chunk read its
-- vector back from there. Rows already stored keep their TOASTed values until they are rewritten
-- (VACUUM FULL chunks, pg_repack, or re-ingesting the document).
ALTER TABLE chunks SET (toast_tuple_target = 8160);
