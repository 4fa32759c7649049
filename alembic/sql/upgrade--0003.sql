-- Revision 0003: a chunk's lexemes read its heading path (chunk_lexemes, sql/text.sql). The
-- update recomputes each chunk's lexemes and term count through the trigger; the namespaces'
-- totals follow at commit (sql/statistics.sql).
CREATE OR REPLACE TRIGGER chunks_text_fields BEFORE INSERT OR UPDATE OF content, text_config, heading_path ON chunks
    FOR EACH ROW EXECUTE FUNCTION _set_text_fields('headings');
UPDATE chunks SET text_config = text_config;
