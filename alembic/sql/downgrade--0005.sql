-- Undo revision 0005: graph_memories as revision 0002 made it.
DROP FUNCTION graph_memories(text, text[], integer, integer, integer, integer, integer);
CREATE INDEX mentions_user_entity ON mentions (user_id, entity_id);
DROP INDEX mentions_user_entity_recent;
CREATE INDEX relations_user_target ON relations (user_id, target_id);
DROP INDEX relations_user_source_weight, relations_user_target_weight;

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

