-- Revision 0015: the HNSW scan's ef_search grows with the model's index. memory_candidates (and the
-- API's vector statement) searched with ef_search = 2 x the pool, at least 40, whatever the
-- index held. At 1 user x 1,000,000 memories a pool of 10 then found 92 % of the exact top 10
-- (distance ties counted as right); 100 gave 94 % and 200 gave 96 %. hnsw_ef_search adds a
-- floor of one per 5,000 rows of the model's partial index (pg_class.reltuples, kept by VACUUM,
-- ANALYZE and CREATE INDEX): 200 at a million, 1000 at most, and nothing changes below 200,000
-- rows. A distributed table's shards hold their own counts: on Citus the coordinator sees none
-- and the floor is the pool's.

CREATE OR REPLACE FUNCTION hnsw_ef_search(p_model text, p_pool integer, p_space text DEFAULT 'embedding')
RETURNS integer
LANGUAGE plpgsql STABLE  -- PL/pgSQL keeps its plan; a SQL function's was made on every call (0.25 ms)
SET search_path FROM CURRENT
AS $$
BEGIN
    RETURN (
        SELECT least(1000, greatest(40, 2 * p_pool, ceil(greatest(coalesce(max(c.reltuples), 0), 0) / 5000)::integer))
        FROM embedding_models m
        LEFT JOIN pg_class c ON c.oid = to_regclass(quote_ident(
            CASE p_space WHEN 'text_embedding' THEN 'memories_text_embedding_' ELSE 'memories_embedding_' END
            || m.index_suffix))
        WHERE m.model = p_model);
END $$;
COMMENT ON FUNCTION hnsw_ef_search(text, integer, text) IS
    'hnsw.ef_search for a scan of p_pool rows of the partial HNSW index of p_model on memories '
    '(p_space embedding or text_embedding): twice the pool, at least 40, and at least one per 5,000 '
    'rows the index holds (pg_class.reltuples), at most 1000.';

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
