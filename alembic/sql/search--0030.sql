-- Revision 0030: when every query term is common, search_memories' full-text candidates are
-- found by looking up the rarest of the terms in the index (as many as it takes for their
-- memories, were the terms independent, to be at most 50) and checking every term in the rows it
-- finds, instead of intersecting every common term's postings in the index. The same rows in the
-- same order (a bitmap scan returns them by their place in the table either way), with the same
-- scores.

CREATE OR REPLACE FUNCTION search_memories(
    p_user_id text, p_model text, p_query vector, p_query_text text, p_limit integer DEFAULT 10,
    p_memory_types text[] DEFAULT NULL, p_session_id text DEFAULT NULL,
    p_since timestamptz DEFAULT NULL, p_until timestamptz DEFAULT NULL,
    p_min_importance double precision DEFAULT NULL, p_modality text DEFAULT NULL,
    p_space text DEFAULT 'text', p_now timestamptz DEFAULT now(),
    p_names text[] DEFAULT NULL, p_seeds text[] DEFAULT NULL, p_max_hops integer DEFAULT 2,
    p_time_from timestamptz DEFAULT NULL, p_time_to timestamptz DEFAULT NULL,
    p_mode text DEFAULT 'hybrid', p_fusion text DEFAULT 'weighted', p_per_type integer DEFAULT NULL,
    p_pool integer DEFAULT NULL, p_session_prefix text DEFAULT NULL, p_where jsonpath DEFAULT NULL,
    p_where_vars jsonb DEFAULT NULL)
RETURNS TABLE (id uuid, memory_type text, content text, importance double precision, session_id text,
               modality text, metadata jsonb, created_at timestamptz,
               vector_score double precision, text_score double precision,
               context_score double precision, session_score double precision,
               speaker_score double precision, graph_score double precision,
               time_score double precision, recency_score double precision,
               importance_weight double precision, score double precision)
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
SET plan_cache_mode = force_generic_plan  -- one plan for every user (planning the ranking anew cost
                                          -- 5 ms a search): every step is an index lookup led by the
                                          -- user, and each memory is read by key in a LATERAL
                                          -- subquery (OFFSET 0), which no plan can turn into a scan
SET jit = off  -- compiling the ranking costs 100-130 ms where running it costs 5-50
SET enable_sort = on  -- whatever the caller set: the plain vector statement turns both off
SET enable_seqscan = on  -- in its transaction and calls this function when its HNSW scan is short
AS $$
#variable_conflict use_column
DECLARE
    v_terms text[];
    v_query tsquery;
    v_documents double precision;
    v_average double precision;
    -- vector candidates: a pool to fuse with the lexical branch; vector alone needs the limit
    -- (recency and importance then reorder within it), or the pool when a time range may lift one
    v_pool integer := coalesce(p_pool, CASE WHEN p_mode = 'vector' AND p_time_from IS NULL THEN p_limit
                                            ELSE greatest(40, coalesce(p_limit, 0)) END);
    v_types text[];  -- the types searched in the embedding space when p_space is 'text'
    v_perceptual boolean := p_memory_types IS NULL OR 'perceptual' = ANY (p_memory_types);
    v_seeds text[];  -- the named entities specific enough to expand from
    v_common integer;
    v_cap integer := 200;  -- a term in more of the user's memories is common (fixed: limit changes nothing)
    v_df double precision[];  -- each term's document frequency
    v_rare text[];
    v_frequent text[];
    v_candidates integer;  -- at most this many lexical candidates (NULL: every match)
    v_any tsquery;  -- any query term
    v_scan tsquery;  -- what the full-text index looks up: v_query, or the rarest of its terms
    v_narrowed boolean := false;  -- v_scan is fewer terms than v_query, which then filters
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
    SELECT greatest(t.memories, 1), greatest(t.terms::double precision / greatest(t.memories, 1), 1)
    INTO v_documents, v_average
    FROM memory_text_totals t WHERE t.user_id = p_user_id;
    IF p_mode <> 'vector' THEN
        v_terms := query_terms(coalesce(p_query_text, ''));
        v_any := terms_query(v_terms);
    END IF;
    IF v_any IS NOT NULL AND v_documents <= v_cap THEN
        v_query := v_any;  -- few memories: every match is a candidate, frequencies counted below
    ELSIF v_any IS NOT NULL AND v_documents IS NOT NULL THEN
        -- Each term's live memories, from the counts the triggers keep (revision 0014). The
        -- candidates are the memories with a rarer term; when every term found is common, the
        -- memories with all of those, at most the cap (a speaker's name, in half of a chat, does
        -- not make every turn a candidate).
        SELECT array_agg(coalesce(c.memories, 0)::double precision ORDER BY t.ord),
               array_agg(t.term ORDER BY t.ord) FILTER (WHERE c.memories BETWEEN 1 AND v_cap),
               array_agg(t.term ORDER BY t.ord) FILTER (WHERE c.memories > v_cap)
        INTO v_df, v_rare, v_frequent
        FROM unnest(v_terms) WITH ORDINALITY AS t(term, ord)
        LEFT JOIN memory_term_counts c ON c.user_id = p_user_id AND c.lexeme = t.term;
        IF v_rare IS NOT NULL THEN
            v_query := terms_query(v_rare);
        ELSIF v_frequent IS NOT NULL THEN
            v_query := (SELECT to_tsquery('simple'::regconfig, string_agg(quote_literal(x), ' & '))
                        FROM unnest(v_frequent) AS x);
            v_candidates := v_cap;
            -- The index looks up the rarest of those terms, as many as it takes for their
            -- memories (were the terms independent) to be at most 50; every term is then checked
            -- in the rows it finds. The same rows in the same order: a bitmap scan returns them
            -- by their place in the table either way. (Intersecting every common term's
            -- postings was most of a search of a million memories.)
            SELECT to_tsquery('simple'::regconfig, string_agg(quote_literal(s.term), ' & ' ORDER BY s.df, s.term)),
                   count(*) < cardinality(v_frequent)
            INTO v_scan, v_narrowed
            FROM (SELECT t.term, t.df,
                         v_documents * exp(coalesce(sum(ln(least(t.df / v_documents, 1))) OVER (
                             ORDER BY t.df, t.term ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)) AS before
                  FROM unnest(v_terms, v_df) AS t(term, df)
                  WHERE t.df > v_cap) AS s
            WHERE s.before > 50;
        END IF;
    END IF;
    v_scan := coalesce(v_scan, v_query);
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
    IF p_mode = 'vector' THEN
        -- The vector branch alone: the same scores as below, without planning the lexical branch.
        RETURN QUERY
        WITH by_vector AS MATERIALIZED (
            SELECT c.id, c.vector_score
            FROM memory_candidates(p_user_id, p_model, p_query, v_pool, v_types, p_session_id,
                                   p_since, p_until, p_min_importance, p_modality, 'embedding',
                               p_session_prefix, p_where, p_where_vars) AS c
            WHERE p_space = 'embedding' OR p_space = 'text' AND cardinality(v_types) > 0
            UNION ALL
            SELECT c.id, c.vector_score
            FROM memory_candidates(p_user_id, p_model, p_query, v_pool, ARRAY['perceptual'], p_session_id,
                                   p_since, p_until, p_min_importance, p_modality, 'text_embedding',
                               p_session_prefix, p_where, p_where_vars) AS c
            WHERE p_space = 'text_embedding' OR p_space = 'text' AND v_perceptual
        ), components AS (
            SELECT m.id, m.memory_type, m.content, m.importance, m.session_id, m.modality, m.metadata,
                   m.created_at, greatest(0, v.vector_score) AS vector_raw,
                   in_time_range(m.created_at, p_time_from, p_time_to) AS in_time,
                   memory_recency(p_now, m.created_at) AS recency
            FROM by_vector v
            CROSS JOIN LATERAL (SELECT * FROM memories x WHERE x.user_id = p_user_id AND x.id = v.id OFFSET 0) AS m
            WHERE m.forgotten_at IS NULL
              AND (p_memory_types IS NULL OR m.memory_type = ANY (p_memory_types))
        ), ranked AS (
            SELECT c.*, coalesce(c.vector_raw / nullif(max(c.vector_raw) OVER (), 0), 0) AS vector_n
            FROM components c
        ), scored AS (
            SELECT r.*, ranking_score(vector_relevance(r.vector_n, r.in_time), r.recency, r.importance) AS final,
                   row_number() OVER (PARTITION BY r.memory_type
                                      ORDER BY ranking_score(vector_relevance(r.vector_n, r.in_time), r.recency,
                                                             r.importance) DESC, r.id) AS type_rank
            FROM ranked r
        )
        SELECT b.id, b.memory_type, b.content, b.importance, b.session_id, b.modality, b.metadata, b.created_at,
               b.vector_n::double precision, 0::double precision, 0::double precision, 0::double precision,
               0::double precision, 0::double precision, b.in_time::double precision,
               b.recency::double precision, importance_weight(b.importance), b.final::double precision
        FROM scored b
        WHERE p_per_type IS NULL OR b.type_rank <= p_per_type
        ORDER BY b.final DESC, b.id
        LIMIT p_limit;
        RETURN;
    END IF;
    RETURN QUERY
    WITH by_vector AS MATERIALIZED (
        SELECT c.id, c.vector_score
        FROM memory_candidates(p_user_id, p_model, p_query, v_pool, v_types, p_session_id,
                               p_since, p_until, p_min_importance, p_modality, 'embedding',
                               p_session_prefix, p_where, p_where_vars) AS c
        WHERE p_mode <> 'lexical' AND (p_space = 'embedding' OR p_space = 'text' AND cardinality(v_types) > 0)
        UNION ALL
        SELECT c.id, c.vector_score
        FROM memory_candidates(p_user_id, p_model, p_query, v_pool, ARRAY['perceptual'], p_session_id,
                               p_since, p_until, p_min_importance, p_modality, 'text_embedding',
                               p_session_prefix, p_where, p_where_vars) AS c
        WHERE p_space = 'text_embedding' AND p_mode <> 'lexical' OR p_space = 'text' AND v_perceptual
    ), capped AS MATERIALIZED (  -- the memories with the candidate terms (see above), with those terms
        SELECT m.id, m.session_id, m.created_at, m.seq, m.term_count,
               ts_filter(setweight(m.lexemes, 'A', v_terms), '{a}') AS hits,
               m.memory_type, m.importance, m.metadata ->> 'speaker' AS speaker,
               memory_similarity(m.memory_type, m.embedding_model, m.embedding, m.text_embedding_model,
                                 m.text_embedding, p_model, p_query, p_space) AS similarity
        FROM memories m
        WHERE v_query IS NOT NULL
          AND m.user_id = p_user_id AND m.lexemes @@ v_scan AND m.forgotten_at IS NULL
          AND (NOT v_narrowed OR ts_match_vq(m.lexemes, v_query))  -- the function: a filter, not
                                                                     -- a second index lookup
          AND (p_memory_types IS NULL OR m.memory_type = ANY (p_memory_types))
          AND (p_session_id IS NULL OR m.session_id = p_session_id)
          AND (p_since IS NULL OR m.created_at >= p_since)
          AND (p_until IS NULL OR m.created_at <= p_until)
          AND (p_min_importance IS NULL OR m.importance >= p_min_importance)
          AND (p_modality IS NULL OR m.modality = p_modality)
          AND (p_session_prefix IS NULL OR starts_with(m.session_id, p_session_prefix))
          AND (p_where IS NULL OR jsonb_path_match(m.metadata, p_where, coalesce(p_where_vars, '{}'), true))
        LIMIT v_candidates
    ), lexical AS MATERIALIZED (  -- those, and the nearest that have them
        SELECT x.id, x.session_id, x.created_at, x.seq, x.term_count, x.hits FROM capped x
        UNION ALL
        SELECT m.id, m.session_id, m.created_at, m.seq, m.term_count,
               ts_filter(setweight(m.lexemes, 'A', v_terms), '{a}')
        FROM by_vector v
        CROSS JOIN LATERAL (  -- by key: never a scan of every match
            SELECT * FROM memories x WHERE x.user_id = p_user_id AND x.id = v.id OFFSET 0) AS m
        WHERE v_candidates IS NOT NULL AND m.lexemes @@ v_query AND NOT EXISTS (SELECT 1 FROM capped x WHERE x.id = v.id)
    ), adjacent AS MATERIALIZED (  -- the two memories before and the two after each candidate in its session,
                                   -- and those of them that hold a query term
        SELECT l.id, coalesce(b.ids, '{}') || coalesce(a.ids, '{}') AS around,
               coalesce(b.holding, '{}') || coalesce(a.holding, '{}') AS holding,
               l.term_count + coalesce(b.length, 0) + coalesce(a.length, 0) AS length
        FROM lexical l
        LEFT JOIN LATERAL (
            SELECT array_agg(q.id) AS ids, sum(q.term_count) AS length,
                   array_agg(q.id) FILTER (WHERE q.lexemes @@ v_any) AS holding
            FROM (SELECT q.id, q.term_count, q.lexemes FROM memories q
                  WHERE q.user_id = p_user_id AND q.session_id = l.session_id AND q.forgotten_at IS NULL
                    AND (q.created_at, q.seq) < (l.created_at, l.seq)
                  ORDER BY q.created_at DESC, q.seq DESC LIMIT 2) AS q) AS b ON l.session_id IS NOT NULL
        LEFT JOIN LATERAL (
            SELECT array_agg(q.id) AS ids, sum(q.term_count) AS length,
                   array_agg(q.id) FILTER (WHERE q.lexemes @@ v_any) AS holding
            FROM (SELECT q.id, q.term_count, q.lexemes FROM memories q
                  WHERE q.user_id = p_user_id AND q.session_id = l.session_id AND q.forgotten_at IS NULL
                    AND (q.created_at, q.seq) > (l.created_at, l.seq)
                  ORDER BY q.created_at, q.seq LIMIT 2) AS q) AS a ON l.session_id IS NOT NULL
    ), neighbours AS MATERIALIZED (  -- those neighbours that hold a query term and are no candidate
        SELECT m.id, m.session_id, m.created_at, m.seq, m.term_count,
               ts_filter(setweight(m.lexemes, 'A', v_terms), '{a}') AS hits
        FROM (SELECT DISTINCT n.id FROM adjacent j CROSS JOIN LATERAL unnest(j.holding) AS n(id)) AS x
        CROSS JOIN LATERAL (SELECT * FROM memories y WHERE y.user_id = p_user_id AND y.id = x.id OFFSET 0) AS m
        WHERE NOT EXISTS (SELECT 1 FROM lexical l WHERE l.id = x.id)
    ), chosen AS MATERIALIZED (
        SELECT l.id, l.session_id, l.term_count, l.hits FROM lexical l
        UNION ALL
        SELECT n.id, n.session_id, n.term_count, n.hits FROM neighbours n
    ), sequence AS MATERIALIZED (  -- every chosen memory with its neighbours (the candidates' known)
        SELECT j.id, j.around, j.length FROM adjacent j
        UNION ALL
        SELECT n.id, coalesce(b.ids, '{}') || coalesce(a.ids, '{}'),
               n.term_count + coalesce(b.length, 0) + coalesce(a.length, 0)
        FROM neighbours n
        LEFT JOIN LATERAL (
            SELECT array_agg(q.id) AS ids, sum(q.term_count) AS length
            FROM (SELECT q.id, q.term_count FROM memories q
                  WHERE q.user_id = p_user_id AND q.session_id = n.session_id AND q.forgotten_at IS NULL
                    AND (q.created_at, q.seq) < (n.created_at, n.seq)
                  ORDER BY q.created_at DESC, q.seq DESC LIMIT 2) AS q) AS b ON n.session_id IS NOT NULL
        LEFT JOIN LATERAL (
            SELECT array_agg(q.id) AS ids, sum(q.term_count) AS length
            FROM (SELECT q.id, q.term_count FROM memories q
                  WHERE q.user_id = p_user_id AND q.session_id = n.session_id AND q.forgotten_at IS NULL
                    AND (q.created_at, q.seq) > (n.created_at, n.seq)
                  ORDER BY q.created_at, q.seq LIMIT 2) AS q) AS a ON n.session_id IS NOT NULL
    ), term_frequency AS MATERIALIZED (
        SELECT c.id, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf
        FROM chosen c, unnest(c.hits) AS u
    ), idf AS MATERIALIZED (
        SELECT t.lexeme, ln(1 + (v_documents - t.df + 0.5) / (t.df + 0.5)) AS w
        FROM unnest(v_terms, v_df) AS t(lexeme, df)
        WHERE v_df IS NOT NULL
        UNION ALL  -- every match a candidate: the frequencies are theirs
        SELECT f.lexeme, ln(1 + (v_documents - count(*) + 0.5) / (count(*) + 0.5))
        FROM term_frequency f
        WHERE v_df IS NULL
        GROUP BY f.lexeme
    ), bm25 AS (  -- BM25 of the memory, and of the memory with its neighbours as one text five turns long
        SELECT x.id,
               sum(i.w * x.own_tf * 2.2 / (x.own_tf + 1.2 * (0.25 + 0.75 * x.term_count / v_average))) AS own,
               sum(i.w * x.tf * 2.2 / (x.tf + 1.2 * (0.25 + 0.75 * x.length / (5 * v_average)))) AS context
        FROM (SELECT c.id, c.term_count, coalesce(q.length, c.term_count) AS length, f.lexeme,
                     sum(f.tf) FILTER (WHERE member.id = c.id) AS own_tf, sum(f.tf) AS tf
              FROM chosen c
              LEFT JOIN sequence q ON q.id = c.id
              CROSS JOIN LATERAL unnest(c.id || coalesce(q.around, '{}')) AS member(id)
              JOIN term_frequency f ON f.id = member.id
              GROUP BY 1, 2, 3, 4) AS x
        JOIN idf i USING (lexeme)
        GROUP BY x.id
    ), session_bm25 AS (  -- BM25 of the session as one text, without length normalisation
        SELECT s.session_id, sum(i.w * s.tf * 2.2 / (s.tf + 1.2)) AS bm25
        FROM (SELECT l.session_id, f.lexeme, sum(f.tf) AS tf
              FROM term_frequency f JOIN chosen l ON l.id = f.id
              WHERE l.session_id IS NOT NULL GROUP BY 1, 2) AS s
        JOIN idf i USING (lexeme)
        GROUP BY s.session_id
    ), by_graph AS (
        SELECT g.memory_id AS id, g.graph_score
        FROM graph_memories(p_user_id, v_seeds, p_max_hops, v_pool) AS g
        WHERE v_seeds IS NOT NULL
    ), found AS (  -- each candidate's components in one aggregate: no join of the steps above, whose
                   -- sizes the planner cannot know (it chose nested loops over hundreds of rows)
        SELECT s.id, max(s.vector_score) AS vector_score, max(s.own) AS own, max(s.context) AS context,
               max(s.session) AS session, max(s.graph) AS graph
        FROM (SELECT v.id, v.vector_score, NULL::double precision AS own, NULL::double precision AS context,
                     NULL::double precision AS session, NULL::double precision AS graph
              FROM by_vector v
              UNION ALL SELECT c.id, NULL, NULL, NULL, NULL, NULL FROM chosen c
              UNION ALL SELECT b.id, NULL, b.own, b.context, NULL, NULL FROM bm25 b
              UNION ALL SELECT c.id, NULL, NULL, NULL, sb.bm25, NULL
                        FROM chosen c JOIN session_bm25 sb ON sb.session_id = c.session_id
              UNION ALL SELECT g.id, NULL, NULL, NULL, NULL, g.graph_score FROM by_graph g) AS s
        GROUP BY s.id
    ), components AS (  -- numbers only: the text is read for the winners alone; the lexical
                        -- candidates as the full-text scan read them, the others by key
        SELECT f.id, coalesce(k.memory_type, m.memory_type) AS memory_type,
               coalesce(k.importance, m.importance) AS importance,
               greatest(0, coalesce(f.vector_score,
                   CASE WHEN p_mode = 'lexical' THEN 0
                        ELSE coalesce(k.similarity, memory_similarity(m.memory_type, m.embedding_model, m.embedding,
                                 m.text_embedding_model, m.text_embedding, p_model, p_query, p_space)) END))
                   AS vector_raw,
               coalesce(f.own, 0) AS own_raw,
               coalesce(f.context, 0) AS context_raw,
               CASE WHEN f.own > 0 THEN coalesce(f.session, 0) ELSE 0 END AS session_raw,
               CASE WHEN f.own > 0 AND lower(coalesce(k.speaker, m.metadata ->> 'speaker')) = ANY (p_names)
                    THEN 1.0 ELSE 0.0 END AS speaker,
               coalesce(f.graph, 0) AS graph,
               in_time_range(coalesce(k.created_at, m.created_at), p_time_from, p_time_to) AS in_time,
               memory_recency(p_now, coalesce(k.created_at, m.created_at)) AS recency
        FROM found f
        LEFT JOIN capped k ON k.id = f.id
        LEFT JOIN LATERAL (SELECT * FROM memories x
                           WHERE k.id IS NULL AND x.user_id = p_user_id AND x.id = f.id OFFSET 0) AS m ON true
        WHERE k.id IS NOT NULL  -- the full-text scan applied the filters; a row read by key meets them here
           OR (m.forgotten_at IS NULL
               AND (p_memory_types IS NULL OR m.memory_type = ANY (p_memory_types))
               AND (p_session_id IS NULL OR m.session_id = p_session_id)
               AND (p_since IS NULL OR m.created_at >= p_since)
               AND (p_until IS NULL OR m.created_at <= p_until)
               AND (p_min_importance IS NULL OR m.importance >= p_min_importance)
               AND (p_modality IS NULL OR m.modality = p_modality)
               AND (p_session_prefix IS NULL OR starts_with(m.session_id, p_session_prefix))
               AND (p_where IS NULL OR jsonb_path_match(m.metadata, p_where, coalesce(p_where_vars, '{}'), true)))
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
        SELECT f.*, ranking_score(f.relevance_score, f.recency, f.importance) AS final
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
    CROSS JOIN LATERAL (SELECT * FROM memories x WHERE x.user_id = p_user_id AND x.id = b.id OFFSET 0) AS m
    ORDER BY b.final DESC, b.id;
END $$;
COMMENT ON FUNCTION search_memories(text, text, vector, text, integer, text[], text, timestamptz, timestamptz,
                                   double precision, text, text, timestamptz, text[], text[], integer,
                                   timestamptz, timestamptz, text, text, integer, integer, text, jsonpath, jsonb) IS
    'Hybrid search of one user''s long-term memories (see the header of search--0014.sql): BM25 of '
    'the memory, of the memory with the two before and the two after it in its session, of its session, a speaker the query names, cosine '
    'similarity, knowledge-graph expansion for semantic memories and a time range the query names; '
    'each component normalised by its best candidate; recency and importance only break near-ties '
    '(at most 0.02). p_mode hybrid, lexical or vector; p_fusion weighted or rrf; p_per_type caps each '
    'memory type; p_session_prefix, p_where (a jsonpath predicate on the metadata, with the '
    'variables p_where_vars) filter the candidates before any limit. Every component is returned.';
