-- Revision 0009, part 2: hybrid search of memories and chunks, relevance first.
--
-- search_memories ranks a user's long-term memories of any types in one statement:
--   lexical  BM25 of the memory's own terms, of its context (the memories just before and after
--            it in its session) and of its session, all with the user's inverse document
--            frequencies; plus a match of the memory's speaker (metadata.speaker) with a name the
--            query gives. Candidates: the memories with a query term (GIN, the user's rows only);
--            a term in more than 30% of the memories (and more than 50) makes a memory a
--            candidate only next to one with a rarer term.
--   vector   cosine similarity; candidates: the pool nearest (memory_candidates, HNSW), episodic
--            and semantic memories by their text vector, perceptual ones by their description's.
--   graph    for semantic memories, the knowledge-graph expansion of the entities the query names
--            that are specific (mentioned by at most 5% of the memories, or 20).
-- Each component is normalised by its best value among the candidates, then
--   relevance = 0.8 × (0.4 own + 0.6 context + 0.3 session + 0.3 speaker) / 1.6 + 0.2 × vector
--               (+ 0.2 × graph, + 0.2 when the memory falls in the time range the query names)
-- or, with p_fusion => 'rrf', 30 × (1/(60 + lexical rank) + 1/(60 + vector rank)). Recency and
-- importance only break near-ties: together they add at most 0.02. Weights were chosen on LoCoMo's
-- development conversations (bench/retrieval.py, docs/search.md); p_mode => 'lexical' or 'vector'
-- keeps one branch. The reference's formulas stay in search_episodic, search_semantic and
-- search_perceptual.

CREATE FUNCTION search_memories(
    p_user_id text, p_model text, p_query vector, p_query_text text, p_limit integer DEFAULT 10,
    p_memory_types text[] DEFAULT NULL, p_session_id text DEFAULT NULL,
    p_since timestamptz DEFAULT NULL, p_until timestamptz DEFAULT NULL,
    p_min_importance double precision DEFAULT NULL, p_modality text DEFAULT NULL,
    p_space text DEFAULT 'text', p_now timestamptz DEFAULT now(),
    p_names text[] DEFAULT NULL, p_seeds text[] DEFAULT NULL, p_max_hops integer DEFAULT 2,
    p_time_from timestamptz DEFAULT NULL, p_time_to timestamptz DEFAULT NULL,
    p_mode text DEFAULT 'hybrid', p_fusion text DEFAULT 'weighted', p_per_type integer DEFAULT NULL,
    p_pool integer DEFAULT NULL)
RETURNS TABLE (id uuid, memory_type text, content text, importance double precision, session_id text,
               modality text, metadata jsonb, created_at timestamptz,
               vector_score double precision, text_score double precision,
               context_score double precision, session_score double precision,
               speaker_score double precision, graph_score double precision,
               time_score double precision, recency_score double precision,
               importance_weight double precision, score double precision)
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
SET plan_cache_mode = force_custom_plan  -- a generic plan cannot know how many memories match
AS $$
#variable_conflict use_column
DECLARE
    v_terms text[];
    v_query tsquery;
    v_documents double precision;
    v_average double precision;
    v_pool integer := coalesce(p_pool, greatest(100, coalesce(p_limit, 0) * 5));
    v_types text[];  -- the types searched in the embedding space when p_space is 'text'
    v_perceptual boolean := p_memory_types IS NULL OR 'perceptual' = ANY (p_memory_types);
    v_seeds text[];  -- the named entities specific enough to expand from
    v_common integer;
BEGIN
    IF p_limit IS NULL OR p_limit NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'limit must be between 1 and 1000, got %', coalesce(p_limit::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_mode IS NULL OR p_mode NOT IN ('hybrid', 'lexical', 'vector') THEN
        RAISE EXCEPTION 'mode must be hybrid, lexical or vector, got %', coalesce(quote_literal(p_mode), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_fusion IS NULL OR p_fusion NOT IN ('weighted', 'rrf') THEN
        RAISE EXCEPTION 'fusion must be weighted or rrf, got %', coalesce(quote_literal(p_fusion), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_space IS NULL OR p_space NOT IN ('text', 'embedding', 'text_embedding') THEN
        RAISE EXCEPTION 'space must be text, embedding or text_embedding, got %', coalesce(quote_literal(p_space), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_types := CASE WHEN p_space = 'text'
                    THEN array_remove(coalesce(p_memory_types, ARRAY['episodic', 'semantic']), 'perceptual')
                    ELSE p_memory_types END;
    IF p_mode <> 'vector' THEN
        v_terms := query_terms(coalesce(p_query_text, ''));
        v_query := terms_query(v_terms);
    END IF;
    SELECT greatest(t.memories, 1), greatest(t.terms::double precision / greatest(t.memories, 1), 1)
    INTO v_documents, v_average
    FROM memory_text_totals t WHERE t.user_id = p_user_id;
    IF p_mode <> 'vector' AND coalesce(array_length(p_seeds, 1), 0) > 0
       AND (p_memory_types IS NULL OR 'semantic' = ANY (p_memory_types)) THEN
        -- An entity that more than 5% of the memories mention (a chat's speakers) says little about
        -- which memory is meant: expanding from it only brings in its latest mentions.
        v_common := greatest(20, ceil(0.05 * coalesce(v_documents, 0)))::integer;
        SELECT array_agg(e.name_norm) INTO v_seeds
        FROM entities e
        WHERE e.user_id = p_user_id AND e.name_norm = ANY (p_seeds)
          AND (SELECT count(*) FROM (SELECT 1 FROM mentions x WHERE x.user_id = p_user_id AND x.entity_id = e.id
                                     LIMIT v_common + 1) AS c) <= v_common;
    END IF;
    v_perceptual := v_perceptual AND p_mode <> 'lexical' AND EXISTS (  -- skip an empty vector search
        SELECT 1 FROM memories m
        WHERE m.user_id = p_user_id AND m.memory_type = 'perceptual' AND m.forgotten_at IS NULL);
    RETURN QUERY
    WITH lexical AS MATERIALIZED (  -- the memories with a query term, and those terms' entries
        SELECT m.id, m.session_id, m.term_count, ts_filter(setweight(m.lexemes, 'A', v_terms), '{a}') AS hits
        FROM memories m
        WHERE v_query IS NOT NULL AND v_documents IS NOT NULL
          AND m.user_id = p_user_id AND m.lexemes @@ v_query AND m.forgotten_at IS NULL
          AND (p_memory_types IS NULL OR m.memory_type = ANY (p_memory_types))
          AND (p_session_id IS NULL OR m.session_id = p_session_id)
          AND (p_since IS NULL OR m.created_at >= p_since)
          AND (p_until IS NULL OR m.created_at <= p_until)
          AND (p_min_importance IS NULL OR m.importance >= p_min_importance)
          AND (p_modality IS NULL OR m.modality = p_modality)
    ), term_frequency AS MATERIALIZED (
        SELECT l.id, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf
        FROM lexical l, unnest(l.hits) AS u
    ), idf AS MATERIALIZED (
        SELECT f.lexeme, count(*) AS df, ln(1 + (v_documents - count(*) + 0.5) / (count(*) + 0.5)) AS w
        FROM term_frequency f GROUP BY f.lexeme
    ), strong AS MATERIALIZED (  -- memories with a term that is not common (in more than 30% of the
        SELECT DISTINCT f.id       -- memories and more than 50), or with any term if every term is
        FROM term_frequency f JOIN idf i USING (lexeme)
        WHERE i.df <= greatest(0.3 * v_documents, 50)
           OR NOT EXISTS (SELECT 1 FROM idf j WHERE j.df <= greatest(0.3 * v_documents, 50))
    ), sequence AS MATERIALIZED (  -- the memories of the sessions with a strong match, with their neighbours
        SELECT q.id, lag(q.id) OVER w AS previous_id, lead(q.id) OVER w AS next_id,
               q.term_count + coalesce(lag(q.term_count) OVER w, 0) + coalesce(lead(q.term_count) OVER w, 0) AS length
        FROM memories q
        WHERE q.user_id = p_user_id AND q.forgotten_at IS NULL
          AND q.session_id IN (SELECT l.session_id FROM lexical l JOIN strong s ON s.id = l.id)
        WINDOW w AS (PARTITION BY q.session_id ORDER BY q.created_at, q.id)
    ), chosen AS MATERIALIZED (  -- strong matches, and the matching memories just before or after them
        SELECT s.id FROM strong s
        UNION
        SELECT n.id
        FROM strong s
        JOIN sequence q ON q.id = s.id
        CROSS JOIN LATERAL (VALUES (q.previous_id), (q.next_id)) AS n(id)
        JOIN lexical l ON l.id = n.id
    ), own AS (
        SELECT f.id, sum(i.w * f.tf * 2.2 / (f.tf + 1.2 * (0.25 + 0.75 * l.term_count / v_average))) AS bm25
        FROM chosen c
        JOIN term_frequency f ON f.id = c.id
        JOIN idf i USING (lexeme)
        JOIN lexical l ON l.id = c.id
        GROUP BY f.id
    ), context_bm25 AS (  -- BM25 of the memory with its neighbours, as one text three turns long
        SELECT x.id, sum(i.w * x.tf * 2.2 / (x.tf + 1.2 * (0.25 + 0.75 * x.length / (3 * v_average)))) AS bm25
        FROM (SELECT c.id, coalesce(q.length, l.term_count) AS length, f.lexeme, sum(f.tf) AS tf
              FROM chosen c
              JOIN lexical l ON l.id = c.id
              LEFT JOIN sequence q ON q.id = c.id
              CROSS JOIN LATERAL unnest(ARRAY[q.previous_id, c.id, q.next_id]) AS member(id)
              JOIN term_frequency f ON f.id = member.id
              GROUP BY 1, 2, 3) AS x
        JOIN idf i USING (lexeme)
        GROUP BY x.id
    ), session_bm25 AS (  -- BM25 of the session as one text, without length normalisation
        SELECT s.session_id, sum(i.w * s.tf * 2.2 / (s.tf + 1.2)) AS bm25
        FROM (SELECT l.session_id, f.lexeme, sum(f.tf) AS tf
              FROM term_frequency f JOIN lexical l ON l.id = f.id
              WHERE l.session_id IS NOT NULL GROUP BY 1, 2) AS s
        JOIN idf i USING (lexeme)
        GROUP BY s.session_id
    ), by_vector AS (
        SELECT c.id, c.vector_score
        FROM memory_candidates(p_user_id, p_model, p_query, v_pool, v_types, p_session_id,
                               p_since, p_until, p_min_importance, p_modality, 'embedding') AS c
        WHERE p_mode <> 'lexical' AND (p_space = 'embedding' OR p_space = 'text' AND cardinality(v_types) > 0)
        UNION ALL
        SELECT c.id, c.vector_score
        FROM memory_candidates(p_user_id, p_model, p_query, v_pool, ARRAY['perceptual'], p_session_id,
                               p_since, p_until, p_min_importance, p_modality, 'text_embedding') AS c
        WHERE p_space = 'text_embedding' AND p_mode <> 'lexical' OR p_space = 'text' AND v_perceptual
    ), by_graph AS (
        SELECT g.memory_id AS id, g.graph_score
        FROM graph_memories(p_user_id, v_seeds, p_max_hops, v_pool) AS g
        WHERE v_seeds IS NOT NULL
    ), found AS (
        SELECT c.id FROM chosen c UNION SELECT v.id FROM by_vector v UNION SELECT g.id FROM by_graph g
    ), components AS (  -- numbers only: the text is read for the winners alone
        SELECT m.id, m.memory_type, m.importance,
               greatest(0, coalesce(v.vector_score,
                   CASE WHEN p_mode = 'lexical' THEN 0
                        WHEN (p_space = 'embedding' OR p_space = 'text' AND m.memory_type <> 'perceptual')
                             AND m.embedding_model = p_model THEN 1 - (m.embedding <=> p_query)
                        WHEN (p_space = 'text_embedding' OR p_space = 'text' AND m.memory_type = 'perceptual')
                             AND m.text_embedding_model = p_model THEN 1 - (m.text_embedding <=> p_query)
                        ELSE 0 END)) AS vector_raw,
               coalesce(o.bm25, 0) AS own_raw,
               coalesce(cb.bm25, 0) AS context_raw,
               CASE WHEN o.bm25 > 0 THEN coalesce(sb.bm25, 0) ELSE 0 END AS session_raw,
               CASE WHEN o.bm25 > 0 AND lower(m.metadata ->> 'speaker') = ANY (p_names) THEN 1.0 ELSE 0.0 END
                   AS speaker,
               coalesce(g.graph_score, 0) AS graph,
               CASE WHEN p_time_from IS NOT NULL AND m.created_at >= p_time_from
                         AND (p_time_to IS NULL OR m.created_at < p_time_to) THEN 1.0 ELSE 0.0 END AS in_time,
               episodic_recency(greatest(0, extract(epoch FROM p_now - m.created_at)::float8 / 86400)) AS recency
        FROM found f
        JOIN memories m ON m.user_id = p_user_id AND m.id = f.id
        LEFT JOIN by_vector v ON v.id = f.id
        LEFT JOIN own o ON o.id = f.id
        LEFT JOIN context_bm25 cb ON cb.id = f.id
        LEFT JOIN session_bm25 sb ON sb.session_id = m.session_id
        LEFT JOIN by_graph g ON g.id = f.id
        WHERE m.forgotten_at IS NULL
          AND (p_memory_types IS NULL OR m.memory_type = ANY (p_memory_types))
          AND (p_session_id IS NULL OR m.session_id = p_session_id)
          AND (p_since IS NULL OR m.created_at >= p_since)
          AND (p_until IS NULL OR m.created_at <= p_until)
          AND (p_min_importance IS NULL OR m.importance >= p_min_importance)
          AND (p_modality IS NULL OR m.modality = p_modality)
    ), normalised AS (
        SELECT c.*,
               c.vector_raw / nullif(max(c.vector_raw) OVER (), 0) AS vector_n,
               c.own_raw / nullif(max(c.own_raw) OVER (), 0) AS own_n,
               c.context_raw / nullif(max(c.context_raw) OVER (), 0) AS context_n,
               c.session_raw / nullif(max(c.session_raw) OVER (), 0) AS session_n
        FROM components c
    ), relevance AS (
        SELECT n.*,
               (0.4 * coalesce(n.own_n, 0) + 0.6 * coalesce(n.context_n, 0) + 0.3 * coalesce(n.session_n, 0)
                + 0.3 * n.speaker) / 1.6 AS lexical
        FROM normalised n
    ), fused AS (
        SELECT r.*,
               CASE
                   WHEN p_mode = 'lexical' THEN r.lexical
                   WHEN p_mode = 'vector' THEN coalesce(r.vector_n, 0)
                   WHEN p_fusion = 'rrf' THEN
                       (CASE WHEN r.lexical > 0 THEN 1.0 / (60 + rank() OVER (ORDER BY r.lexical DESC)) ELSE 0 END
                        + CASE WHEN r.vector_raw > 0 THEN 1.0 / (60 + rank() OVER (ORDER BY r.vector_raw DESC)) ELSE 0 END)
                       * 30
                   ELSE 0.8 * r.lexical + 0.2 * coalesce(r.vector_n, 0)
               END + 0.2 * r.graph + 0.2 * r.in_time AS relevance_score
        FROM relevance r
    ), ranked AS (
        SELECT f.*, f.relevance_score + 0.01 * f.recency + 0.01 * f.importance AS final
        FROM fused f
    ), best AS (
        SELECT r.*
        FROM (SELECT r.*, row_number() OVER (PARTITION BY r.memory_type ORDER BY r.final DESC, r.id) AS type_rank
              FROM ranked r) AS r
        WHERE p_per_type IS NULL OR r.type_rank <= p_per_type
        ORDER BY r.final DESC, r.id
        LIMIT p_limit
    )
    SELECT b.id, m.memory_type, m.content, m.importance, m.session_id, m.modality, m.metadata, m.created_at,
           coalesce(b.vector_n, 0)::double precision, coalesce(b.own_n, 0)::double precision,
           coalesce(b.context_n, 0)::double precision, coalesce(b.session_n, 0)::double precision,
           b.speaker::double precision, b.graph::double precision, b.in_time::double precision,
           b.recency::double precision, importance_weight(b.importance), b.final::double precision
    FROM best b
    JOIN memories m ON m.user_id = p_user_id AND m.id = b.id
    ORDER BY b.final DESC, b.id;
END $$;
COMMENT ON FUNCTION search_memories(text, text, vector, text, integer, text[], text, timestamptz, timestamptz,
                                   double precision, text, text, timestamptz, text[], text[], integer,
                                   timestamptz, timestamptz, text, text, integer, integer) IS
    'Hybrid search of one user''s long-term memories (see the header of search--0009.sql): BM25 of '
    'the memory, its neighbours in the session and its session, a speaker the query names, cosine '
    'similarity, knowledge-graph expansion for semantic memories and a time range the query names; '
    'each component normalised by its best candidate; recency and importance only break near-ties '
    '(at most 0.02). p_mode hybrid, lexical or vector; p_fusion weighted or rrf; p_per_type caps each '
    'memory type. Every component is returned.';

ALTER FUNCTION search_memories(text, text, vector, text, integer, text[], text, timestamptz, timestamptz,
                               double precision, text, text, timestamptz, text[], text[], integer,
                               timestamptz, timestamptz, text, text, integer, integer) ROWS 20;

-- -------------------------------------------------------------------------- chunks

DROP FUNCTION search_chunks(text, text, vector, text, integer, text[], text, integer);

CREATE FUNCTION _query_dimension(p_model text, p_query vector)
RETURNS integer
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
DECLARE
    v_dimension integer;
BEGIN
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
    RETURN v_dimension;
END $$;
COMMENT ON FUNCTION _query_dimension(text, vector) IS
    'Internal: the dimension of a registered model, after checking that the query vector has it.';
DROP FUNCTION fts_query_any(text);
-- replaced by query_terms and text_lexemes:
DROP FUNCTION fts_query(text);
DROP FUNCTION fts_document(text);
DROP FUNCTION fts_prepare(text);

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
#variable_conflict use_column
DECLARE
    v_dimension integer;
    v_type text;
    v_pool integer := coalesce(p_pool, p_limit * 4);
    v_terms text[] := query_terms(coalesce(p_query_text, ''));
    v_query tsquery;
    v_documents double precision;
    v_average double precision;
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
    v_dimension := _query_dimension(p_model, p_query);
    v_query := terms_query(v_terms);
    SELECT greatest(t.chunks, 1), greatest(t.terms::double precision / greatest(t.chunks, 1), 1)
    INTO v_documents, v_average
    FROM chunk_text_totals t WHERE t.namespace = p_namespace;
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
        ), matching AS MATERIALIZED (
            SELECT c.id, c.lexemes, c.term_count
            FROM chunks c
            WHERE $8::tsquery IS NOT NULL AND $9::double precision IS NOT NULL
              AND c.namespace = $1 AND c.lexemes @@ $8 AND ($4::text[] IS NULL OR c.document_id = ANY ($4))
        ), term_frequency AS (
            SELECT m.id, m.term_count, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf
            FROM matching m, unnest(m.lexemes) AS u WHERE u.lexeme = ANY ($11)
        ), idf AS (
            SELECT f.lexeme, ln(1 + ($9 - count(*) + 0.5) / (count(*) + 0.5)) AS w FROM term_frequency f GROUP BY 1
        ), by_text AS (
            SELECT s.id, s.bm25 AS text_score, row_number() OVER (ORDER BY s.bm25 DESC, s.id) AS rank
            FROM (SELECT f.id, sum(i.w * f.tf * 2.2 / (f.tf + 1.2 * (0.25 + 0.75 * f.term_count / $10))) AS bm25
                  FROM term_frequency f JOIN idf i USING (lexeme) GROUP BY f.id) AS s
            ORDER BY s.bm25 DESC, s.id
            LIMIT $5
        ), fused AS (
            SELECT coalesce(v.id, t.id) AS id, v.vector_score,
                   coalesce(t.text_score / nullif(max(t.text_score) OVER (), 0), 0) AS text_score,
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
    USING p_namespace, p_query, coalesce(p_query_text, ''), p_document_ids, v_pool, p_fusion, p_limit,
          v_query, v_documents, v_average, v_terms;
END $$;
COMMENT ON FUNCTION search_chunks(text, text, vector, text, integer, text[], text, integer) IS
    'Hybrid chunk search in one namespace (optionally some documents): the pool (limit * 4 by '
    'default) nearest chunks by vector and the pool best by BM25 over the chunks'' lexemes '
    '(language-aware, CJK as character pairs; text_score is normalised by the best), fused by '
    'reciprocal rank fusion (k = 60, default) or by 0.7 * vector_score + 0.3 * text_score. '
    'vector_score is the cosine similarity, computed for keyword-only hits too.';
