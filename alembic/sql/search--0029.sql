-- Revision 0029: memory_candidates reads a user with few memories, searched by types alone in
-- the embedding space of a model stored as vector (the hybrid search's common case), by a static
-- statement planned once per session, instead of a dynamic one parsed and planned on every call.
-- The same rows in the same order. Sequential scans are off inside it, so that the plan made
-- once reads every user through an index led by user_id.

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
SET enable_seqscan = off  -- the static exact read's plan is made once for every user: it must read
                          -- the user's rows through an index led by user_id, never the table
AS $$
DECLARE
    v_dimension integer;
    v_type text;
    v_filters text;
    v_ids uuid[];
    v_distances double precision[];
    v_matching bigint;
    v_user_rows bigint;  -- the user's live memories (memory_text_totals)
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
    v_type := vector_type_for(v_dimension);
    SELECT coalesce(max(t.memories), 0) INTO v_user_rows FROM memory_text_totals t WHERE t.user_id = p_user_id;
    IF v_user_rows <= exact_scan_rows() AND p_space = 'embedding' AND v_type = 'vector'
       AND p_session_id IS NULL AND p_since IS NULL AND p_until IS NULL AND p_min_importance IS NULL
       AND p_modality IS NULL AND p_session_prefix IS NULL AND p_where IS NULL THEN
        -- A user with few memories, searched in the common space and type by types alone: read
        -- exactly by a static statement, planned once per session where the dynamic one below is
        -- planned per call (+ 0 keeps the planner off the index)
        RETURN QUERY
        SELECT n.id, 1 - n.distance
        FROM (SELECT m.id, m.embedding <=> p_query AS distance
              FROM memories m
              WHERE m.user_id = p_user_id
                AND m.embedding_model = p_model
                AND m.forgotten_at IS NULL
                AND (p_memory_types IS NULL OR m.memory_type = ANY (p_memory_types))
              ORDER BY (m.embedding <=> p_query) + 0
              LIMIT p_pool) AS n
        ORDER BY n.distance;
        RETURN;
    END IF;
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
    IF v_user_rows > exact_scan_rows() THEN
        PERFORM set_config('hnsw.ef_search', hnsw_ef_search(p_model, p_pool, p_space)::text, true);
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
        END IF;
        IF cardinality(v_ids) >= p_pool OR v_matching <= cardinality(v_ids) THEN
            RETURN QUERY SELECT u.found_id, 1 - u.found_distance
                         FROM unnest(v_ids, v_distances) WITH ORDINALITY AS u(found_id, found_distance, rank)
                         ORDER BY u.rank;
            RETURN;
        END IF;
    END IF;
    -- A user with few memories searched otherwise (filters, another space or type), or an index
    -- scan that stopped short: the same query read exactly (+ 0 keeps the planner off the index)
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
END $$;
COMMENT ON FUNCTION memory_candidates(text, text, vector, integer, text[], text, timestamptz, timestamptz,
                                      double precision, text, text, text, jsonpath, jsonb) IS
    'The p_pool nearest long-term memories of one user for one embedding model, with every filter '
    '(types, session or session prefix, time range, minimum importance, modality, '
    'a jsonpath predicate on the metadata with its variables) applied inside the vector scan. '
    'p_space picks the vector column: embedding (default) or text_embedding (descriptions of '
    'perceptual memories). vector_score is the cosine similarity. Forgotten memories never appear. '
    'A user with at most exact_scan_rows() live memories is read exactly (searched by types alone '
    'in the embedding space of a model stored as vector, by a statement planned once per session); '
    'above that the HNSW '
    'index is scanned, and when it returns fewer than p_pool rows but the filters keep more, the '
    'query runs again as an exact scan, so the pool is always full when the user has that many memories.';
