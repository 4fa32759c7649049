-- Revision 0003: RAG search. Chunks are found by vector similarity (HNSW, namespace and document
-- filters inside the scan) and by full text (any query word or CJK character pair), and the two
-- rankings are fused, by reciprocal rank fusion (default) or by a weighted sum.

CREATE FUNCTION fts_query_any(query text)
RETURNS tsquery
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
BEGIN ATOMIC
    WITH tokens AS (
        SELECT u.lexeme, p AS pos FROM unnest(fts_document(query)) AS u, unnest(u.positions) AS p
    ), ordered AS (
        SELECT lexeme, pos,
               lag(lexeme) OVER w AS prev, lag(pos) OVER w AS prev_pos,
               lead(lexeme) OVER w AS next, lead(pos) OVER w AS next_pos
        FROM tokens WINDOW w AS (ORDER BY pos)
    ), parts AS (
        SELECT CASE
            WHEN lexeme !~ '^[぀-ヿ㐀-䶿一-鿿가-힯豈-﫿]$' THEN quote_literal(lexeme)
            WHEN next ~ '^[぀-ヿ㐀-䶿一-鿿가-힯豈-﫿]$' AND next_pos = pos + 1
                THEN quote_literal(lexeme) || ' <-> ' || quote_literal(next)
            WHEN prev ~ '^[぀-ヿ㐀-䶿一-鿿가-힯豈-﫿]$' AND prev_pos = pos - 1 THEN NULL
            ELSE quote_literal(lexeme)
        END AS part
        FROM ordered
    )
    SELECT coalesce(to_tsquery('simple', string_agg(DISTINCT part, ' | ')), ''::tsquery)
    FROM parts WHERE part IS NOT NULL;
END;
COMMENT ON FUNCTION fts_query_any(text) IS
    'A tsquery matching any word of query, or any pair of adjacent CJK characters (a lone CJK '
    'character matches alone); for ranking chunks by keyword overlap with ts_rank_cd.';

CREATE FUNCTION search_chunks(
    p_namespace text, p_model text, p_query vector, p_query_text text, p_limit integer DEFAULT 5,
    p_document_ids text[] DEFAULT NULL, p_fusion text DEFAULT 'rrf', p_pool integer DEFAULT NULL)
RETURNS TABLE (id uuid, document_id text, "position" integer, content text, heading_path text[],
               start_char integer, end_char integer, source_path text,
               vector_score double precision, text_score double precision, score double precision)
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
SET hnsw.iterative_scan = 'relaxed_order'
SET hnsw.ef_search = 40
AS $$
DECLARE
    v_dimension integer;
    v_type text;
    v_pool integer := coalesce(p_pool, p_limit * 4);
BEGIN
    IF p_namespace IS NULL OR btrim(p_namespace) = '' THEN
        RAISE EXCEPTION 'namespace must be a non-empty string' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'limit must be between 1 and 1000, got %', coalesce(p_limit::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF v_pool NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'pool must be between 1 and 10000, got %', v_pool USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_fusion IS NULL OR p_fusion NOT IN ('rrf', 'weighted') THEN
        RAISE EXCEPTION 'fusion must be rrf or weighted, got %', coalesce(quote_literal(p_fusion), 'NULL')
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
    PERFORM set_config('hnsw.ef_search', least(1000, greatest(40, 2 * v_pool))::text, true);
    v_type := vector_type_for(v_dimension);
    RETURN QUERY EXECUTE format($sql$
        WITH nearest AS MATERIALIZED (
            SELECT c.id, c.embedding::%1$s(%2$s) <=> $2::%1$s(%2$s) AS distance
            FROM chunks c
            WHERE c.namespace = $1 AND c.embedding_model = %3$L
              AND ($4::text[] IS NULL OR c.document_id = ANY ($4))
            ORDER BY c.embedding::%1$s(%2$s) <=> $2::%1$s(%2$s)
            LIMIT $5
        ), by_vector AS (
            SELECT n.id, 1 - n.distance AS vector_score,
                   row_number() OVER (ORDER BY n.distance + 0) AS rank
            FROM nearest n
        ), keywords AS (SELECT fts_query_any($3) AS q),
        by_text AS (
            SELECT c.id, ts_rank_cd(c.search_text, k.q, 32) AS text_score,
                   row_number() OVER (ORDER BY ts_rank_cd(c.search_text, k.q, 32) DESC, c.id) AS rank
            FROM chunks c, keywords k
            WHERE c.namespace = $1 AND c.search_text @@ k.q
              AND ($4::text[] IS NULL OR c.document_id = ANY ($4))
            ORDER BY 2 DESC, c.id
            LIMIT $5
        ), fused AS (
            SELECT coalesce(v.id, t.id) AS id, v.vector_score, coalesce(t.text_score, 0) AS text_score,
                   coalesce(1.0 / (60 + v.rank), 0) + coalesce(1.0 / (60 + t.rank), 0) AS rrf
            FROM by_vector v FULL OUTER JOIN by_text t ON t.id = v.id
        )
        SELECT c.id, c.document_id, c.position, c.content, c.heading_path, c.start_char, c.end_char,
               d.source_path, s.vector_score, f.text_score::double precision,
               (CASE WHEN $6 = 'rrf' THEN f.rrf ELSE 0.7 * s.vector_score + 0.3 * f.text_score END)::double precision
        FROM fused f
        JOIN chunks c ON c.namespace = $1 AND c.id = f.id
        JOIN documents d ON d.namespace = c.namespace AND d.id = c.document_id
        CROSS JOIN LATERAL (SELECT coalesce(f.vector_score,
            CASE WHEN c.embedding_model = %3$L THEN 1 - (c.embedding <=> $2) ELSE 0 END)::double precision
            AS vector_score) s
        ORDER BY 11 DESC, c.id
        LIMIT $7
        $sql$, v_type, v_dimension, p_model)
    USING p_namespace, p_query, coalesce(p_query_text, ''), p_document_ids, v_pool, p_fusion, p_limit;
END $$;
COMMENT ON FUNCTION search_chunks(text, text, vector, text, integer, text[], text, integer) IS
    'Hybrid chunk search in one namespace (optionally some documents): the pool (limit * 4 by '
    'default) nearest chunks by vector and the pool best by full text (ts_rank_cd of '
    'fts_query_any), fused by reciprocal rank fusion (k = 60, default) or by '
    '0.7 * vector_score + 0.3 * text_score. vector_score is the cosine similarity, computed for '
    'keyword-only hits too.';
