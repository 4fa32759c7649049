-- Undo revision 0001 (runs with search_path set to the hello_pgmem schema).
DROP FUNCTION search_perceptual, search_episodic, memory_candidates;
DROP FUNCTION register_embedding_model, vector_type_for;
DROP TABLE relations, mentions, entities, embedding_cache, chunks, documents,
           working_memories, memories, embedding_models;
DROP FUNCTION fts_query, fts_document, fts_prepare;
DROP FUNCTION working_priority, working_score, semantic_score, episodic_score,
              perceptual_recency, episodic_recency, working_time_decay, importance_weight,
              _require_range;
