-- Undo revision 0006 (runs with search_path set to the hello_pgmem schema).
DROP TABLE retrieval_log;
DROP VIEW rag_namespaces, rag_documents, top_entities, relation_weights, entity_stats, graph_orphans,
          decay_candidates, stale_memories, memory_duplicates, memory_stats;
DROP FUNCTION near_duplicates;
