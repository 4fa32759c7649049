-- Revision 0006, after the files of sql/: the triggers that keep embedded_hash. Each is the last
-- of its table's BEFORE triggers (by name), so it sees the vector a stale text lost.
CREATE OR REPLACE TRIGGER memories_vector_fingerprint
    BEFORE INSERT OR UPDATE OF content, embedding, embedding_model, embedded_hash ON memories
    FOR EACH ROW EXECUTE FUNCTION _fingerprint_vector();
CREATE OR REPLACE TRIGGER chunks_vector_fingerprint
    BEFORE INSERT OR UPDATE OF content, heading_path, embedding, embedding_model, embedded_hash ON chunks
    FOR EACH ROW EXECUTE FUNCTION _fingerprint_vector();
