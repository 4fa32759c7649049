-- Revision 0002: the vector space to search becomes a parameter (embedding or text_embedding),
-- and semantic search joins vector candidates with knowledge-graph candidates.

DROP FUNCTION search_perceptual(text, text, vector, integer, text, timestamptz, timestamptz,
                                double precision, timestamptz);
DROP FUNCTION memory_candidates(text, text, vector, integer, text[], text, timestamptz,
                                timestamptz, double precision, text);

CREATE FUNCTION memory_candidates(
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
    RETURN QUERY EXECUTE format($sql$
        WITH nearest AS MATERIALIZED (
            SELECT m.id, m.%4$I::%1$s(%2$s) <=> $2::%1$s(%2$s) AS distance
            FROM memories m
            WHERE m.user_id = $1
              AND m.%5$I = %3$L
              AND m.forgotten_at IS NULL
              AND ($3::text[] IS NULL OR m.memory_type = ANY ($3))
              AND ($4::text IS NULL OR m.session_id = $4)
              AND ($5::timestamptz IS NULL OR m.created_at >= $5)
              AND ($6::timestamptz IS NULL OR m.created_at <= $6)
              AND ($7::double precision IS NULL OR m.importance >= $7)
              AND ($8::text IS NULL OR m.modality = $8)
            ORDER BY m.%4$I::%1$s(%2$s) <=> $2::%1$s(%2$s)
            LIMIT $9)
        SELECT nearest.id, 1 - nearest.distance FROM nearest ORDER BY nearest.distance + 0
        $sql$, v_type, v_dimension, p_model, p_space, p_space || '_model')
    USING p_user_id, p_query, p_memory_types, p_session_id, p_since, p_until,
          p_min_importance, p_modality, p_pool;
END $$;
COMMENT ON FUNCTION memory_candidates(text, text, vector, integer, text[], text, timestamptz,
                                      timestamptz, double precision, text, text) IS
    'The p_pool nearest long-term memories of one user for one embedding model, with every filter '
    '(types, session, time range, minimum importance, modality) applied inside the vector scan. '
    'p_space picks the vector column: embedding (default) or text_embedding (descriptions of '
    'perceptual memories). vector_score is the cosine similarity. Forgotten memories never appear.';

CREATE FUNCTION search_perceptual(
    p_user_id text, p_model text, p_query vector, p_limit integer DEFAULT 5,
    p_modality text DEFAULT NULL, p_since timestamptz DEFAULT NULL,
    p_until timestamptz DEFAULT NULL, p_min_importance double precision DEFAULT NULL,
    p_now timestamptz DEFAULT now(), p_space text DEFAULT 'embedding')
RETURNS TABLE (id uuid, memory_type text, content text, importance double precision,
               modality text, metadata jsonb, created_at timestamptz,
               vector_score double precision, recency_score double precision,
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
    SELECT m.id, m.memory_type, m.content, m.importance, m.modality, m.metadata, m.created_at,
           c.vector_score, r.recency, importance_weight(m.importance),
           episodic_score(greatest(-1, least(1, c.vector_score)), r.recency, m.importance)
    FROM memory_candidates(p_user_id, p_model, p_query, p_limit * 5, ARRAY['perceptual'],
                           NULL, p_since, p_until, p_min_importance, p_modality, p_space) AS c
    JOIN memories m ON m.user_id = p_user_id AND m.id = c.id
    CROSS JOIN LATERAL (
        SELECT perceptual_recency(greatest(0, extract(epoch FROM p_now - m.created_at)::float8 / 3600))
            AS recency) AS r
    ORDER BY 11 DESC, 1
    LIMIT p_limit;
END $$;
COMMENT ON FUNCTION search_perceptual(text, text, vector, integer, text, timestamptz, timestamptz,
                                      double precision, timestamptz, text) IS
    'Ranked perceptual search in one embedding space (model, and p_space embedding or '
    'text_embedding), optionally one modality: score = (vector_score * 0.8 + recency * 0.2) * '
    'importance_weight, recency = max(0.1, exp(-0.1 * age_hours / 24)) at p_now.';
