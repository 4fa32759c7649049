-- Undo revision 0025: memory_candidates as revisions 0015 and 0018 wrote it, and exact_scan_rows dropped.

CREATE OR REPLACE FUNCTION memory_candidates(
    p_user_id text, p_model text, p_query vector, p_pool integer,
    p_memory_types text[] DEFAULT NULL, p_session_id text DEFAULT NULL,
    p_since timestamptz DEFAULT NULL, p_until timestamptz DEFAULT NULL,
    p_min_importance double precision DEFAULT NULL, p_modality text DEFAULT NULL,
    p_space text DEFAULT 'embedding', p_session_prefix text DEFAULT NULL,
    p_where jsonpath DEFAULT NULL, p_where_vars jsonb DEFAULT NULL)
RETURNS TABLE (id uuid, vector_score double precision)
LANGUAGE plpgsql STABLE ROWS 50
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
    PERFORM set_config('hnsw.ef_search', hnsw_ef_search(p_model, p_pool, p_space)::text, true);
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
              AND ($8::text IS NULL OR m.modality = $8)
              AND ($10::text IS NULL OR starts_with(m.session_id, $10))
              AND ($11::jsonpath IS NULL OR jsonb_path_match(m.metadata, $11, coalesce($12, '{}'), true))$f$, p_model, p_space || '_model');
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
          p_min_importance, p_modality, p_pool, p_session_prefix, p_where, p_where_vars;
    IF cardinality(v_ids) < p_pool THEN
        EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM memories m WHERE %s LIMIT $9) AS kept', v_filters)
        INTO v_matching
        USING p_user_id, p_query, p_memory_types, p_session_id, p_since, p_until,
              p_min_importance, p_modality, p_pool, p_session_prefix, p_where, p_where_vars;
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
                  p_min_importance, p_modality, p_pool, p_session_prefix, p_where, p_where_vars;
            RETURN;
        END IF;
    END IF;
    RETURN QUERY SELECT u.found_id, 1 - u.found_distance
                 FROM unnest(v_ids, v_distances) WITH ORDINALITY AS u(found_id, found_distance, rank)
                 ORDER BY u.rank;
END $$;
COMMENT ON FUNCTION memory_candidates(text, text, vector, integer, text[], text, timestamptz, timestamptz,
                                      double precision, text, text, text, jsonpath, jsonb) IS
    'The p_pool nearest long-term memories of one user for one embedding model, with every filter '
    '(types, session or session prefix, time range, minimum importance, modality, '
    'a jsonpath predicate on the metadata with its variables) applied inside the vector scan. '
    'p_space picks the vector column: embedding (default) or text_embedding (descriptions of '
    'perceptual memories). vector_score is the cosine similarity. Forgotten memories never appear. '
    'When the HNSW scan returns fewer than p_pool rows but the filters keep more, the query runs '
    'again as an exact scan, so the pool is always full when the user has that many memories.';

DROP FUNCTION exact_scan_rows();
