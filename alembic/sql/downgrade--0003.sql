-- Down from revision 0003: a chunk's lexemes read its text alone again.
CREATE OR REPLACE TRIGGER chunks_text_fields BEFORE INSERT OR UPDATE OF content, text_config ON chunks
    FOR EACH ROW EXECUTE FUNCTION _set_text_fields();
UPDATE chunks SET text_config = text_config;
