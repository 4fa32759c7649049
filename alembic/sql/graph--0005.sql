-- Revision 0005: graph_memories with fan-out limits, so that hub entities (a technology or a city
-- mentioned by thousands of memories) cannot make a search walk the whole graph. Each step
-- follows at most p_fanout relations per entity (the heaviest), at most p_max_entities entities
-- are reached (nearest first), and each reached entity contributes its p_per_entity most recent
-- memories. The vector side of search_semantic still finds every memory.

DROP FUNCTION graph_memories(text, text[], integer, integer, integer);

-- Indexes in the walk's order: each step reads only the rows it keeps.
CREATE INDEX mentions_user_entity_recent ON mentions (user_id, entity_id, created_at DESC, memory_id);
DROP INDEX mentions_user_entity;
CREATE INDEX relations_user_source_weight ON relations (user_id, source_id, weight DESC);
CREATE INDEX relations_user_target_weight ON relations (user_id, target_id, weight DESC);
DROP INDEX relations_user_target;

CREATE FUNCTION graph_memories(p_user_id text, p_seeds text[], p_max_hops integer DEFAULT 2,
                               p_limit integer DEFAULT 50, p_max_entities integer DEFAULT 100,
                               p_fanout integer DEFAULT 10, p_per_entity integer DEFAULT 20)
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
    IF p_max_entities NOT BETWEEN 1 AND 10000 OR p_fanout NOT BETWEEN 1 AND 1000
       OR p_per_entity NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'max_entities, fanout and per_entity must be between 1 and 10000, 1000, 1000'
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN QUERY
    WITH RECURSIVE seeds AS (
        SELECT e.id FROM entities e WHERE e.user_id = p_user_id AND e.name_norm = ANY (p_seeds)
    ), walk (entity_id, hops) AS (
        SELECT s.id, 0 FROM seeds s
        UNION
        SELECT step.to_id, w.hops + 1
        FROM walk w
        CROSS JOIN LATERAL (
            SELECT r.to_id FROM relation_edges r
            WHERE r.user_id = p_user_id AND r.from_id = w.entity_id
            ORDER BY r.weight DESC, r.to_id
            LIMIT p_fanout
        ) AS step
        WHERE w.hops < p_max_hops
    ), reached AS (
        SELECT w.entity_id, min(w.hops) AS hops FROM walk w
        GROUP BY w.entity_id ORDER BY min(w.hops), w.entity_id LIMIT p_max_entities
    ), seed_count AS (SELECT greatest(count(*), 1) AS n FROM seeds)
    SELECT mn.memory_id,
           least(1.0, sum(power(0.5, r.hops)) / (SELECT n FROM seed_count))::double precision,
           min(r.hops)::integer,
           (count(*) FILTER (WHERE r.hops = 0))::integer
    FROM reached r
    CROSS JOIN LATERAL (
        SELECT m.memory_id FROM mentions m
        JOIN memories mem ON mem.user_id = m.user_id AND mem.id = m.memory_id
        WHERE m.user_id = p_user_id AND m.entity_id = r.entity_id
          AND mem.forgotten_at IS NULL AND mem.memory_type = 'semantic'
        ORDER BY m.created_at DESC, m.memory_id
        LIMIT p_per_entity
    ) AS mn
    GROUP BY mn.memory_id
    ORDER BY 2 DESC, 3, 1
    LIMIT p_limit;
END $$;
COMMENT ON FUNCTION graph_memories(text, text[], integer, integer, integer, integer, integer) IS
    'Semantic memories reached from the seed entities (normalised names) within p_max_hops '
    'relations, in either direction, with fan-out limits (p_fanout heaviest relations per entity, '
    'p_max_entities nearest entities, p_per_entity most recent memories per entity). '
    'graph_score = min(1, sum over the memory''s reached entities of 0.5^hops / number of seeds).';
