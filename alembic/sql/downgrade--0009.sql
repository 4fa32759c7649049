-- Undo revision 0009: the search_text columns come back (the generated columns rewrite memories
-- and chunks); the hybrid search, the language columns, their triggers and the totals go. The
-- migration runs text_search--0001.sql before this script and rag--0003.sql after it, so that
-- the fts_* functions and the search_chunks of revisions 0001 and 0003 come back as they were.

DROP FUNCTION search_memories(text, text, vector, text, integer, text[], text, timestamptz, timestamptz,
                              double precision, text, text, timestamptz, text[], text[], integer,
                              timestamptz, timestamptz, text, text, integer, integer);
DROP FUNCTION search_chunks(text, text, vector, text, integer, text[], text, integer);
DROP FUNCTION _query_dimension(text, vector);

DROP TRIGGER memories_text_fields ON memories;
DROP TRIGGER chunks_text_fields ON chunks;
DROP TRIGGER memories_totals_insert ON memories;
DROP TRIGGER memories_totals_update ON memories;
DROP TRIGGER memories_totals_delete ON memories;
DROP TRIGGER chunks_totals_insert ON chunks;
DROP TRIGGER chunks_totals_update ON chunks;
DROP TRIGGER chunks_totals_delete ON chunks;
DROP TRIGGER memories_totals_truncate ON memories;
DROP TRIGGER chunks_totals_truncate ON chunks;
DROP FUNCTION _clear_terms();
DROP FUNCTION _count_terms();
DROP FUNCTION _recount_terms();
DROP FUNCTION _set_text_fields();
DROP TABLE memory_text_totals;
DROP TABLE chunk_text_totals;

ALTER TABLE memories
    DROP COLUMN text_config, DROP COLUMN lexemes, DROP COLUMN term_count, DROP COLUMN recorded_at,
    ADD COLUMN search_text tsvector GENERATED ALWAYS AS (fts_document(content)) STORED;
COMMENT ON COLUMN memories.created_at IS NULL;
CREATE INDEX memories_search_text ON memories USING gin (search_text);
ALTER TABLE chunks
    DROP COLUMN text_config, DROP COLUMN lexemes, DROP COLUMN term_count,
    ADD COLUMN search_text tsvector GENERATED ALWAYS AS (fts_document(content)) STORED;
CREATE INDEX chunks_search_text ON chunks USING gin (search_text);

DROP FUNCTION terms_query(text[]);
DROP FUNCTION query_terms(text);
DROP FUNCTION text_lexemes(text, regconfig);
DROP FUNCTION text_config_for(text);
DROP FUNCTION fts_term_count(tsvector);
DROP FUNCTION fts_segment(text);
