-- Undo revision 0002 (runs with search_path set to the hello_pgmem schema); the revision then
-- re-runs search--0001.sql and embedding_models--0001.sql to restore their functions.
DROP FUNCTION search_semantic, graph_memories;
DROP VIEW relation_edges;
DROP FUNCTION search_perceptual, memory_candidates, search_episodic;
DROP FUNCTION register_embedding_model, _create_model_indexes, vector_type_for;
-- dropping the columns drops their partial HNSW indexes too
ALTER TABLE memories DROP COLUMN text_embedding_model, DROP COLUMN text_embedding;
