-- Revision 0002: knowledge-graph retrieval over the relational graph tables. The hot path, 1-3
-- hop expansion from the query's entities, is one recursive CTE: it works on every PostgreSQL,
-- with or without Apache AGE.

CREATE VIEW relation_edges AS
    SELECT user_id, source_id AS from_id, target_id AS to_id, relation_type, memory_id, weight,
           'out'::text AS direction
    FROM relations
    UNION ALL
    SELECT user_id, target_id, source_id, relation_type, memory_id, weight, 'in'
    FROM relations;
COMMENT ON VIEW relation_edges IS
    'Every relation in both directions (from_id -> to_id), for undirected graph walks.';

CREATE FUNCTION graph_memories(p_user_id text, p_seeds text[], p_max_hops integer DEFAULT 2,
                               p_limit integer DEFAULT 50, p_max_entities integer DEFAULT 2000)
RETURNS TABLE (memory_id uuid, graph_score double precision, hops integer, matched integer)
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
BEGIN
    IF p_max_hops IS NULL OR p_max_hops NOT BETWEEN 0 AND 3 THEN
        RAISE EXCEPTION 'max_hops must be between 0 and 3, got %', coalesce(p_max_hops::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'limit must be between 1 and 10000, got %', coalesce(p_limit::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    WITH RECURSIVE seeds AS (
        SELECT e.id FROM entities e WHERE e.user_id = p_user_id AND e.name_norm = ANY (p_seeds)
    ), walk (entity_id, hops) AS (
        SELECT s.id, 0 FROM seeds s
        UNION
        SELECT r.to_id, w.hops + 1
        FROM walk w
        JOIN relation_edges r ON r.user_id = p_user_id AND r.from_id = w.entity_id
        WHERE w.hops < p_max_hops
    ), reached AS (
        SELECT w.entity_id, min(w.hops) AS hops FROM walk w
        GROUP BY w.entity_id ORDER BY min(w.hops) LIMIT p_max_entities
    ), seed_count AS (SELECT greatest(count(*), 1) AS n FROM seeds)
    SELECT mn.memory_id,
           least(1.0, sum(power(0.5, r.hops)) / (SELECT n FROM seed_count))::double precision,
           min(r.hops)::integer,
           (count(*) FILTER (WHERE r.hops = 0))::integer
    FROM reached r
    JOIN mentions mn ON mn.user_id = p_user_id AND mn.entity_id = r.entity_id
    JOIN memories m ON m.user_id = p_user_id AND m.id = mn.memory_id
    WHERE m.forgotten_at IS NULL AND m.memory_type = 'semantic'
    GROUP BY mn.memory_id
    ORDER BY 2 DESC, 3, 1
    LIMIT p_limit;
END $$;
COMMENT ON FUNCTION graph_memories(text, text[], integer, integer, integer) IS
    'Semantic memories reached from the seed entities (normalised names) within p_max_hops '
    'relations, in either direction. graph_score = min(1, sum over the memory''s reached entities '
    'of 0.5^hops / number of seeds): 1 for a memory that mentions every seed, 0.5 for one that '
    'mentions one of two seeds or a neighbour of the only seed.';

CREATE FUNCTION search_semantic(
    p_user_id text, p_model text, p_query vector, p_seeds text[], p_limit integer DEFAULT 5,
    p_max_hops integer DEFAULT 2, p_since timestamptz DEFAULT NULL, p_until timestamptz DEFAULT NULL,
    p_min_importance double precision DEFAULT NULL)
RETURNS TABLE (id uuid, memory_type text, content text, importance double precision,
               session_id text, metadata jsonb, created_at timestamptz,
               vector_score double precision, graph_score double precision,
               importance_weight double precision, score double precision)
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
BEGIN
    IF p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'limit must be between 1 and 1000, got %', coalesce(p_limit::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    WITH by_vector AS (
        SELECT c.id, c.vector_score
        FROM memory_candidates(p_user_id, p_model, p_query, p_limit * 5, ARRAY['semantic'], NULL,
                               p_since, p_until, p_min_importance) AS c
    ), by_graph AS (
        SELECT g.memory_id AS id, g.graph_score
        FROM graph_memories(p_user_id, p_seeds, p_max_hops, p_limit * 5) AS g
        WHERE coalesce(array_length(p_seeds, 1), 0) > 0
    ), merged AS (
        SELECT coalesce(v.id, g.id) AS id, v.vector_score, coalesce(g.graph_score, 0) AS graph_score
        FROM by_vector v FULL OUTER JOIN by_graph g ON g.id = v.id
    )
    SELECT m.id, m.memory_type, m.content, m.importance, m.session_id, m.metadata, m.created_at,
           s.vector_score, x.graph_score, importance_weight(m.importance),
           semantic_score(s.vector_score, x.graph_score, m.importance)
    FROM merged x
    JOIN memories m ON m.user_id = p_user_id AND m.id = x.id
    CROSS JOIN LATERAL (
        SELECT greatest(-1, least(1, coalesce(x.vector_score,
            CASE WHEN m.embedding_model = p_model THEN 1 - (m.embedding <=> p_query) ELSE 0 END)))
            AS vector_score) AS s
    WHERE (p_since IS NULL OR m.created_at >= p_since)
      AND (p_until IS NULL OR m.created_at <= p_until)
      AND (p_min_importance IS NULL OR m.importance >= p_min_importance)
    ORDER BY 11 DESC, 1
    LIMIT p_limit;
END $$;
COMMENT ON FUNCTION search_semantic(text, text, vector, text[], integer, integer, timestamptz,
                                   timestamptz, double precision) IS
    'Ranked semantic search: limit * 5 candidates by vector and limit * 5 by the knowledge graph '
    '(graph_memories from the seed entities), merged by memory id; score = (vector_score * 0.7 + '
    'graph_score * 0.3) * importance_weight. A graph-only hit gets its real cosine similarity.';
