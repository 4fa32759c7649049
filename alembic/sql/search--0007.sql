-- Revision 0007: memory_candidates falls back to an exact scan when the HNSW scan comes back
-- short. An iterative HNSW scan may stop before it has found the pool (hnsw.max_scan_tuples,
-- hnsw.scan_mem_multiplier, or a graph region it cannot leave); the benchmark saw 2 queries in
-- 200 return fewer rows than asked. When that happens and the filters keep more rows than were
-- found, the same query runs without the index, so a search returns the full pool whenever the
-- user holds that many matching memories. The check costs nothing when the index fills the pool.
-- The function and graph_memories also declare ROWS 50: with the default estimate of 1000,
-- the generic plan of search_semantic joined their results to a sequential scan of memories
-- (439 ms instead of 22 ms at 100k memories).

CREATE OR REPLACE FUNCTION memory_candidates(
    p_user_id text, p_model text, p_query vector, p_pool integer,
    p_memory_types text[] DEFAULT NULL, p_session_id text DEFAULT NULL,
    p_since timestamptz DEFAULT NULL, p_until timestamptz DEFAULT NULL,
    p_min_importance double precision DEFAULT NULL, p_modality text DEFAULT NULL,
    p_space text DEFAULT 'embedding')
RETURNS TABLE (id uuid, vector_score double precision)
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
SET hnsw.iterative_scan = 'relaxed_order'
SET hnsw.ef_search = 40
AS $$
DECLARE
    v_dimension integer;
    v_type text;
    v_filters text;
    v_ids uuid[];
    v_distances double precision[];
    v_matching bigint;
BEGIN
    IF p_user_id IS NULL OR btrim(p_user_id) = '' THEN
        RAISE EXCEPTION 'user_id must be a non-empty string' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_pool IS NULL OR p_pool NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'pool must be between 1 and 10000, got %', coalesce(p_pool::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_space IS NULL OR p_space NOT IN ('embedding', 'text_embedding') THEN
        RAISE EXCEPTION 'space must be embedding or text_embedding, got %', coalesce(quote_literal(p_space), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT dimension INTO v_dimension FROM embedding_models WHERE model = p_model;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'model % is not registered: call register_embedding_model first',
            coalesce(quote_literal(p_model), 'NULL') USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_query IS NULL OR vector_dims(p_query) <> v_dimension THEN
        RAISE EXCEPTION 'query must be a vector of % dimensions for model %, got %', v_dimension,
            quote_literal(p_model), coalesce(vector_dims(p_query)::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM set_config('hnsw.ef_search', least(1000, greatest(40, 2 * p_pool))::text, true);
    v_type := vector_type_for(v_dimension);
    v_filters := format($f$
              m.user_id = $1
              AND m.%2$I = %1$L
              AND m.forgotten_at IS NULL
              AND ($3::text[] IS NULL OR m.memory_type = ANY ($3))
              AND ($4::text IS NULL OR m.session_id = $4)
              AND ($5::timestamptz IS NULL OR m.created_at >= $5)
              AND ($6::timestamptz IS NULL OR m.created_at <= $6)
              AND ($7::double precision IS NULL OR m.importance >= $7)
              AND ($8::text IS NULL OR m.modality = $8)$f$, p_model, p_space || '_model');
    EXECUTE format($sql$
        SELECT coalesce(array_agg(n.id ORDER BY n.distance), '{}'),
               coalesce(array_agg(n.distance ORDER BY n.distance), '{}')
        FROM (SELECT m.id, m.%3$I::%1$s(%2$s) <=> $2::%1$s(%2$s) AS distance
              FROM memories m
              WHERE %4$s
              ORDER BY m.%3$I::%1$s(%2$s) <=> $2::%1$s(%2$s)
              LIMIT $9) AS n
        $sql$, v_type, v_dimension, p_space, v_filters)
    INTO v_ids, v_distances
    USING p_user_id, p_query, p_memory_types, p_session_id, p_since, p_until,
          p_min_importance, p_modality, p_pool;
    IF cardinality(v_ids) < p_pool THEN
        EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM memories m WHERE %s LIMIT $9) AS kept', v_filters)
        INTO v_matching
        USING p_user_id, p_query, p_memory_types, p_session_id, p_since, p_until,
              p_min_importance, p_modality, p_pool;
        IF v_matching > cardinality(v_ids) THEN
            -- the index scan stopped short: the same query without it (+ 0 keeps the planner off it)
            RETURN QUERY EXECUTE format($sql$
                SELECT n.id, 1 - n.distance
                FROM (SELECT m.id, m.%3$I::%1$s(%2$s) <=> $2::%1$s(%2$s) AS distance
                      FROM memories m
                      WHERE %4$s
                      ORDER BY (m.%3$I::%1$s(%2$s) <=> $2::%1$s(%2$s)) + 0
                      LIMIT $9) AS n
                ORDER BY n.distance
                $sql$, v_type, v_dimension, p_space, v_filters)
            USING p_user_id, p_query, p_memory_types, p_session_id, p_since, p_until,
                  p_min_importance, p_modality, p_pool;
            RETURN;
        END IF;
    END IF;
    RETURN QUERY SELECT u.found_id, 1 - u.found_distance
                 FROM unnest(v_ids, v_distances) WITH ORDINALITY AS u(found_id, found_distance, rank)
                 ORDER BY u.rank;
END $$;
COMMENT ON FUNCTION memory_candidates(text, text, vector, integer, text[], text, timestamptz,
                                      timestamptz, double precision, text, text) IS
    'The p_pool nearest long-term memories of one user for one embedding model, with every filter '
    '(types, session, time range, minimum importance, modality) applied inside the vector scan. '
    'p_space picks the vector column: embedding (default) or text_embedding (descriptions of '
    'perceptual memories). vector_score is the cosine similarity. Forgotten memories never appear. '
    'When the HNSW scan returns fewer than p_pool rows but the filters keep more, the query runs '
    'again as an exact scan, so the pool is always full when the user has that many memories.';

ALTER FUNCTION memory_candidates(text, text, vector, integer, text[], text, timestamptz, timestamptz,
                                 double precision, text, text) ROWS 50;
ALTER FUNCTION graph_memories(text, text[], integer, integer, integer, integer, integer) ROWS 50;
