-- Search: the hybrid ranking of memories across types, its candidate pool and graph branch, the reference's per-type searches, and the search of document chunks.
-- Applied by every migration in which this file changed (sql/README.md); tests/test_sql_live.py
-- holds it equal to a migrated database.

-- A search function made before the hit type (alembic/sql/types.sql), returning its own columns,
-- is dropped to return it.
DO $$
DECLARE
    v_made_before regprocedure;
BEGIN
    FOR v_made_before IN  -- returning a table of its own columns
        SELECT p.oid::regprocedure FROM pg_proc p
        WHERE p.pronamespace = current_schema()::regnamespace AND p.prorettype = 'record'::regtype
          AND p.proname IN ('search_memories', 'search_memories_by_vector')
    LOOP
        EXECUTE format('DROP FUNCTION %s', v_made_before);
    END LOOP;
END $$;

CREATE OR REPLACE FUNCTION _query_dimension(p_model text, p_query vector)
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

CREATE OR REPLACE FUNCTION exact_scan_rows()
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ranking_weight('exact_scan')::integer;
COMMENT ON FUNCTION exact_scan_rows() IS
    'A user with at most this many live memories has their vector candidates read exactly, not '
    'through the HNSW index: every nearest memory found, where an HNSW scan filtered to a small '
    'user misses some (at the 40 candidates of hnsw.ef_search, a LoCoMo conversation holding a fifth '
    'of the index lost about 5 % of its 20 nearest turns), and at that size about as fast.';

CREATE OR REPLACE FUNCTION hybrid_vector_pool(p_limit integer)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN greatest(ranking_weight('nearest')::integer, coalesce(p_limit, 0));
COMMENT ON FUNCTION hybrid_vector_pool(integer) IS
    'How many memories the hybrid search takes nearest by vector for a limit: the limit, at least '
    'ranking_weight(''nearest'').';

CREATE OR REPLACE FUNCTION vector_scan_plan(p_user_id text, p_model text, p_pool integer)
RETURNS TABLE (ef integer, exact boolean)
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
BEGIN
    ef := hnsw_ef_search(p_model, p_pool);
    exact := coalesce((SELECT t.memories FROM memory_text_totals t WHERE t.user_id = p_user_id), 0)
             <= exact_scan_rows();
    RETURN NEXT;
END $$;
COMMENT ON FUNCTION vector_scan_plan(text, text, integer) IS
    'How an unfiltered search of p_user_id''s p_pool nearest memories by p_model reads them, as '
    'memory_candidates does: hnsw.ef_search for an HNSW scan (hnsw_ef_search), or exactly, for a user '
    'of at most exact_scan_rows() live memories. The API''s planned statements read it first.';

DROP FUNCTION IF EXISTS memory_candidates(text, text, vector, integer, text[], text, timestamptz, timestamptz,
                                         double precision, text, text, text, jsonpath, jsonb);
CREATE OR REPLACE FUNCTION memory_candidates(
    p_user_id text, p_model text, p_query vector, p_pool integer, p_filter memory_filter DEFAULT NULL,
    p_space text DEFAULT 'embedding')
RETURNS TABLE (id uuid, vector_score double precision)
LANGUAGE plpgsql STABLE ROWS 50
SET search_path FROM CURRENT
SET jit = off  -- compiling costs more than running (docs/search.md)
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
    PERFORM _require_text(p_user_id, 'user_id');
    PERFORM _require_range(p_pool, 'pool', 1, 10000);
    IF p_space IS NULL OR p_space NOT IN ('embedding', 'text_embedding') THEN
        RAISE EXCEPTION 'space must be embedding or text_embedding, got %', coalesce(quote_literal(p_space), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_dimension := _query_dimension(p_model, p_query);
    v_type := vector_type_for(v_dimension);
    SELECT coalesce(max(t.memories), 0) INTO v_user_rows FROM memory_text_totals t WHERE t.user_id = p_user_id;
    IF v_user_rows <= exact_scan_rows() AND p_space = 'embedding' AND v_type = 'vector'
       AND NOT _filters_beyond_types(p_filter) THEN
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
                AND ((p_filter).memory_types IS NULL OR m.memory_type = ANY ((p_filter).memory_types))
              ORDER BY (m.embedding <=> p_query) + 0
              LIMIT p_pool) AS n
        ORDER BY n.distance;
        RETURN;
    END IF;
    v_filters := format($f$
              m.user_id = $1
              AND m.%2$I = %1$L
              AND m.forgotten_at IS NULL
              AND _passes_filters(m.memory_type, m.session_id, m.created_at, m.importance, m.modality,
                                  m.metadata, $3)$f$, p_model, p_space || '_model');
    IF v_user_rows > exact_scan_rows() THEN
        PERFORM set_config('hnsw.ef_search', hnsw_ef_search(p_model, p_pool, p_space)::text, true);
        EXECUTE format($sql$
            SELECT coalesce(array_agg(n.id ORDER BY n.distance), '{}'),
                   coalesce(array_agg(n.distance ORDER BY n.distance), '{}')
            FROM (SELECT m.id, m.%3$I::%1$s(%2$s) <=> $2::%1$s(%2$s) AS distance
                  FROM memories m
                  WHERE %4$s
                  ORDER BY m.%3$I::%1$s(%2$s) <=> $2::%1$s(%2$s)
                  LIMIT $4) AS n
            $sql$, v_type, v_dimension, p_space, v_filters)
        INTO v_ids, v_distances
        USING p_user_id, p_query, p_filter, p_pool;
        IF cardinality(v_ids) < p_pool THEN
            EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM memories m WHERE %s LIMIT $4) AS kept', v_filters)
            INTO v_matching
            USING p_user_id, p_query, p_filter, p_pool;
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
              LIMIT $4) AS n
        ORDER BY n.distance
        $sql$, v_type, v_dimension, p_space, v_filters)
    USING p_user_id, p_query, p_filter, p_pool;
END $$;
COMMENT ON FUNCTION memory_candidates(text, text, vector, integer, memory_filter, text) IS
    'The p_pool nearest long-term memories of one user for one embedding model, with every filter of '
    'p_filter (memory_filter) applied inside the vector scan. '
    'p_space picks the vector column: embedding (default) or text_embedding (descriptions of '
    'perceptual memories). vector_score is the cosine similarity. Forgotten memories never appear. '
    'A user with at most exact_scan_rows() live memories is read exactly (searched by types alone '
    'in the embedding space of a model stored as vector, by a statement planned once per session); '
    'above that the HNSW '
    'index is scanned, and when it returns fewer than p_pool rows but the filters keep more, the '
    'query runs again as an exact scan, so the pool is always full when the user has that many memories.';

CREATE OR REPLACE FUNCTION graph_memories(p_user_id text, p_seeds text[], p_max_hops integer DEFAULT 2,
                               p_limit integer DEFAULT 50, p_max_entities integer DEFAULT 100,
                               p_fanout integer DEFAULT 10, p_per_entity integer DEFAULT 20)
RETURNS TABLE (memory_id uuid, graph_score double precision, hops integer, matched integer)
LANGUAGE plpgsql STABLE ROWS 50
SET search_path FROM CURRENT
SET jit = off  -- compiling costs more than running (docs/search.md)
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
           least(1.0, sum(power(ranking_weight('graph_decay'), r.hops)) / (SELECT n FROM seed_count))::double precision,
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
    'graph_score = min(1, sum over the memory''s reached entities of graph_decay^hops / number of seeds; '
    'graph_decay 0.5, ranking_weights()).';

DROP FUNCTION IF EXISTS _context_window(text, text, timestamptz, bigint, tsquery, boolean, text, vector, text);
DROP FUNCTION IF EXISTS _context_window(text, text, timestamptz, bigint, tsquery);  -- memory_contexts holds them

CREATE OR REPLACE FUNCTION memory_term_plan(
    p_user_id text, p_terms text[],
    OUT documents double precision, OUT average double precision, OUT df double precision[],
    OUT query tsquery, OUT scan tsquery, OUT narrowed boolean, OUT candidates integer)
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
DECLARE
    v_common integer := ranking_weight('common')::integer;
    v_rare text[];
    v_frequent text[];
BEGIN
    SELECT greatest(t.memories, 1), greatest(t.terms::double precision / greatest(t.memories, 1), 1)
    INTO documents, average
    FROM memory_text_totals t WHERE t.user_id = p_user_id;
    narrowed := false;
    IF cardinality(p_terms) = 0 OR documents IS NULL THEN
        RETURN;
    END IF;
    -- Each term's live memories, from the counts the triggers keep. The candidates are the windows
    -- with a rarer term; when every term found is common, the windows with all of those, at most
    -- the cap (a speaker's name, in half of a chat, does not make every turn a candidate). A user
    -- of at most that many memories has no common term: every match is a candidate.
    SELECT array_agg(coalesce(c.memories, 0)::double precision ORDER BY t.ord),
           array_agg(t.term ORDER BY t.ord) FILTER (WHERE c.memories BETWEEN 1 AND v_common),
           array_agg(t.term ORDER BY t.ord) FILTER (WHERE c.memories > v_common)
    INTO df, v_rare, v_frequent
    FROM unnest(p_terms) WITH ORDINALITY AS t(term, ord)
    LEFT JOIN memory_term_counts c ON c.user_id = p_user_id AND c.lexeme = t.term;
    IF v_rare IS NOT NULL THEN
        query := terms_query(v_rare);
    ELSIF v_frequent IS NOT NULL THEN
        query := (SELECT to_tsquery('simple'::regconfig, string_agg(quote_literal(x), ' & ')) FROM unnest(v_frequent) AS x);
        candidates := v_common;
        -- The index looks up the rarest of those terms, as many as it takes for their memories
        -- (were the terms independent) to be at most ranking_weight('narrowed'); every term is
        -- then checked in the rows it finds. The same rows in the same order: a bitmap scan
        -- returns them by their place in the table either way. (Intersecting every common
        -- term's postings was most of a search of a million memories.)
        SELECT to_tsquery('simple'::regconfig, string_agg(quote_literal(s.term), ' & ' ORDER BY s.df, s.term)),
               count(*) < cardinality(v_frequent)
        INTO scan, narrowed
        FROM (SELECT t.term, t.df,
                     documents * exp(coalesce(sum(ln(least(t.df / documents, 1))) OVER (
                         ORDER BY t.df, t.term ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)) AS before
              FROM unnest(p_terms, df) AS t(term, df)
              WHERE t.df > v_common) AS s
        WHERE s.before > ranking_weight('narrowed')::integer;
    END IF;
    scan := coalesce(scan, query);
END $$;
COMMENT ON FUNCTION memory_term_plan(text, text[]) IS
    'How search_memories looks up a user''s context windows by the query terms p_terms: the user''s live '
    'memories (documents) and their average length in terms; each term''s document frequency (df, the '
    'live memories that hold it); the candidates'' tsquery (query: the terms in at most '
    'ranking_weight(''common'') memories, or every term when all are common), what the full-text index '
    'looks up (scan: the rarest of those terms when narrowed), and at most how many candidates (NULL: '
    'every match).';

CREATE OR REPLACE FUNCTION specific_entities(p_user_id text, p_names text[], p_documents double precision)
RETURNS text[]
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    SELECT array_agg(e.name_norm)
    FROM entities e, LATERAL (SELECT greatest(ranking_weight('specific_least')::integer,
                                              ceil(ranking_weight('specific_share') * coalesce(p_documents, 0))
                                             )::integer AS most) AS w
    WHERE e.user_id = p_user_id AND e.name_norm = ANY (p_names)
      AND (SELECT count(*) FROM (SELECT 1 FROM mentions x WHERE x.user_id = p_user_id AND x.entity_id = e.id
                                 LIMIT w.most + 1) AS c) <= w.most
$$;
COMMENT ON FUNCTION specific_entities(text, text[], double precision) IS
    'The entities of p_names (normalised) that are specific enough to expand from: mentioned by at '
    'most specific_share of the user''s p_documents memories, or specific_least (ranking_weights()). '
    'An entity in most memories (a chat''s speakers) says little about which memory is meant.';

DROP FUNCTION IF EXISTS memory_vector_pool(text, text, vector, integer, text[], boolean, text, text, timestamptz,
                                          timestamptz, double precision, text, text, jsonpath, jsonb);
CREATE OR REPLACE FUNCTION memory_vector_pool(
    p_user_id text, p_model text, p_query vector, p_pool integer, p_types text[], p_perceptual boolean,
    p_space text, p_filter memory_filter)
RETURNS TABLE (id uuid, vector_score double precision, core boolean)
LANGUAGE sql STABLE  -- inlined where it is called
AS $$
    SELECT c.id, c.vector_score,
           row_number() OVER (ORDER BY c.vector_score DESC, c.id) <= ranking_weight('nearest')::integer
    FROM memory_candidates(p_user_id, p_model, p_query, p_pool, filter_with_types(p_filter, p_types),
                           'embedding') AS c
    WHERE p_space = 'embedding' OR p_space = 'text' AND cardinality(p_types) > 0
    UNION ALL
    SELECT c.id, c.vector_score,
           row_number() OVER (ORDER BY c.vector_score DESC, c.id) <= ranking_weight('nearest')::integer
    FROM memory_candidates(p_user_id, p_model, p_query, p_pool, filter_with_types(p_filter, ARRAY['perceptual']),
                           'text_embedding') AS c
    WHERE p_space = 'text_embedding' OR p_space = 'text' AND p_perceptual
$$;
COMMENT ON FUNCTION memory_vector_pool(text, text, vector, integer, text[], boolean, text, memory_filter) IS
    'The vector branch''s candidates of search_memories: the p_pool nearest of the space searched '
    '(p_space text: p_types by their embedding, and with p_perceptual the perceptual memories by their '
    'description''s) that meet p_filter otherwise, each with its cosine; core marks the nearest of each space, which alone take part '
    'in the fusion''s statistics, so a larger limit adds memories below the first ones and never '
    'reorders them.';

DROP FUNCTION IF EXISTS memory_lexical_branch(text, text[], double precision, double precision, double precision[],
                                             tsquery, tsquery, tsquery, boolean, integer, uuid[], boolean, boolean,
                                             text, vector, text, text[], text, timestamptz, timestamptz,
                                             double precision, text, text, jsonpath, jsonb);
DROP FUNCTION IF EXISTS memory_lexical_branch(text, text[], double precision, double precision, double precision[],
                                             tsquery, tsquery, tsquery, boolean, integer, uuid[], boolean,
                                             text, vector, text, text[], text, timestamptz, timestamptz,
                                             double precision, text, text, jsonpath, jsonb);
DROP FUNCTION IF EXISTS memory_lexical_branch(text, text[], double precision, double precision, double precision[],
                                             tsquery, tsquery, boolean, integer, uuid[], boolean,
                                             text, vector, text, text[], text, timestamptz, timestamptz,
                                             double precision, text, text, jsonpath, jsonb);
CREATE OR REPLACE FUNCTION memory_lexical_branch(
    p_user_id text, p_terms text[], p_documents double precision, p_average double precision,
    p_df double precision[], p_query tsquery, p_scan tsquery, p_narrowed boolean,
    p_candidates integer, p_nearest uuid[], p_rrf boolean, p_model text,
    p_query_vector vector, p_space text, p_filter memory_filter)
RETURNS TABLE (id uuid, own double precision, context double precision, session double precision,
               most double precision, kept boolean,
               memory_type text, importance double precision, speaker text, created_at timestamptz,
               similarity double precision)
LANGUAGE sql STABLE  -- inlined where it is called
AS $$
    WITH idf AS MATERIALIZED (  -- the user's live memories that hold each term (memory_term_plan)
        SELECT t.lexeme, bm25_idf(p_documents, t.df) AS w FROM unnest(p_terms, p_df) AS t(lexeme, df) WHERE t.df > 0
    ), ready AS MATERIALIZED (  -- whether memory_contexts holds the user's windows (not while a migration fills them)
        SELECT coalesce((SELECT t.contexts_ready FROM memory_text_totals t WHERE t.user_id = p_user_id), true) AS stored
    ), filtered AS MATERIALIZED (  -- a filter that only the memory's row can tell (the type is in the window's)
        SELECT _filters_beyond_types(p_filter) AS rows
    ), windows AS (  -- the windows that hold the terms: one scan of memory_contexts, or made from memories
        SELECT c.memory_id AS id, c.memory_type, c.lexemes, c.length
        FROM memory_contexts c
        WHERE (SELECT stored FROM ready) AND c.user_id = p_user_id AND c.lexemes @@ p_scan
        UNION ALL
        SELECT w.memory_id, w.memory_type, w.lexemes, w.length
        FROM memory_windows(p_user_id, ARRAY(  -- the memories with a term, and the memories around them
            SELECT a.id
            FROM (SELECT m.id, m.session_id, m.created_at, m.seq FROM memories m
                  WHERE NOT (SELECT stored FROM ready) AND m.user_id = p_user_id AND m.forgotten_at IS NULL
                    AND m.lexemes @@ (SELECT terms_query(array_agg(t.term)) FROM unnest(p_terms) AS t(term)
                                      WHERE terms_query(ARRAY[t.term]) <@ p_query)
                  LIMIT p_candidates) AS m
            CROSS JOIN LATERAL (SELECT m.id UNION ALL
                                SELECT n.id FROM memories_around(p_user_id, m.session_id, m.created_at, m.seq) AS n
                                WHERE m.session_id IS NOT NULL) AS a)) AS w
        WHERE NOT (SELECT stored FROM ready) AND w.lexemes @@ p_scan
    ), scanned AS MATERIALIZED (  -- of those, the ones of the types searched that meet the filters
        SELECT s.id, s.length, ts_filter(setweight(s.lexemes, 'A', p_terms), '{a}') AS hits
        FROM windows s
        WHERE p_query IS NOT NULL
          AND (NOT p_narrowed OR ts_match_vq(s.lexemes, p_query))  -- the function: a filter, not a
                                                                   -- second index lookup
          AND ((p_filter).memory_types IS NULL OR s.memory_type = ANY ((p_filter).memory_types))
          AND (NOT (SELECT rows FROM filtered)
               OR EXISTS (SELECT 1 FROM memories m
                          WHERE m.user_id = p_user_id AND m.id = s.id
                            AND _passes_filters(m.memory_type, m.session_id, m.created_at, m.importance,
                                                m.modality, m.metadata, p_filter)))
        LIMIT p_candidates
    ), scored AS MATERIALIZED (  -- each window's BM25, as one text of five memories
        SELECT s.id, s.length, s.hits,
               coalesce((SELECT sum(bm25(i.w, coalesce(array_length(u.positions, 1), 1), s.length, window_average(p_average)))
                         FROM unnest(s.hits) AS u JOIN idf i ON i.lexeme = u.lexeme), 0) AS context  -- added
                         -- in the lexemes' order whatever the join: both sides are sorted by lexeme
        FROM scanned s
    ), capped AS MATERIALIZED (  -- past ranking_weight('common') memories, the lexical_pool best windows
        SELECT x.* FROM scored x
        WHERE p_documents <= ranking_weight('common')
        UNION ALL
        (SELECT x.* FROM scored x
         WHERE p_documents > ranking_weight('common')
         ORDER BY x.context DESC, x.id
         LIMIT ranking_weight('lexical_pool')::integer)
    ), chosen AS MATERIALIZED (  -- those, and the nearest by vector with their windows, read by key
                                 -- (maybe no query term: an answer's context is the question before it)
        SELECT * FROM capped
        UNION ALL
        SELECT w.id, w.length, w.hits,
               coalesce((SELECT sum(bm25(i.w, coalesce(array_length(u.positions, 1), 1), w.length, window_average(p_average)))
                         FROM unnest(w.hits) AS u JOIN idf i ON i.lexeme = u.lexeme), 0)
        FROM (SELECT v.id, c.length, ts_filter(setweight(c.lexemes, 'A', p_terms), '{a}') AS hits, c.lexemes
              FROM unnest(p_nearest) AS v(id)
              CROSS JOIN LATERAL (SELECT x.length, x.lexemes FROM memory_contexts x
                                  WHERE (SELECT stored FROM ready) AND x.user_id = p_user_id AND x.memory_id = v.id
                                  UNION ALL
                                  SELECT x.length, x.lexemes FROM memory_windows(p_user_id, ARRAY[v.id]) AS x
                                  WHERE NOT (SELECT stored FROM ready)) AS c
              WHERE p_terms IS NOT NULL AND cardinality(p_terms) > 0
                AND NOT EXISTS (SELECT 1 FROM capped x WHERE x.id = v.id)
                AND (NOT p_rrf OR c.lexemes @@ p_query)) AS w  -- rrf ranks by each branch apart: the
                                                               -- lexical one holds the windows with the query's terms
    ), rows AS MATERIALIZED (  -- each candidate's memory, by key: its own terms and what the ranking reads
        SELECT c.id, c.context, m.session_id, m.term_count, ts_filter(setweight(m.lexemes, 'A', p_terms), '{a}') AS hits,
               m.memory_type, m.importance, m.metadata ->> 'speaker' AS speaker, m.created_at,
               memory_similarity(m.memory_type, m.embedding_model, m.embedding, m.text_embedding_model,
                                 m.text_embedding, p_model, p_query_vector, p_space) AS similarity,
               m.forgotten_at IS NULL
               AND _passes_filters(m.memory_type, m.session_id, m.created_at, m.importance, m.modality,
                                   m.metadata, p_filter) AS kept
        FROM chosen c
        CROSS JOIN LATERAL (SELECT * FROM memories x WHERE x.user_id = p_user_id AND x.id = c.id OFFSET 0) AS m
    ), session_bm25 AS (  -- of the session as one text (session_terms), without length normalisation
        SELECT s.session_id, sum(bm25(i.w, t.tf, 1, 1, false) ORDER BY i.lexeme) AS bm25
        FROM (SELECT DISTINCT r.session_id FROM rows r WHERE r.session_id IS NOT NULL) AS s
        CROSS JOIN idf i
        JOIN session_terms t ON t.user_id = p_user_id AND t.lexeme = i.lexeme AND t.session_id = s.session_id
        GROUP BY s.session_id
    )
    SELECT r.id,
           coalesce((SELECT sum(bm25(i.w, coalesce(array_length(u.positions, 1), 1), r.term_count, p_average))
                     FROM unnest(r.hits) AS u JOIN idf i ON i.lexeme = u.lexeme), 0),  -- of the memory alone
           r.context, s.bm25,
           (SELECT bm25_most(sum(i.w)) FROM idf i
            WHERE i.lexeme IN (SELECT u.lexeme FROM rows x, unnest(x.hits) AS u)),
           r.kept, r.memory_type, r.importance, r.speaker, r.created_at, r.similarity
    FROM rows r
    LEFT JOIN session_bm25 s ON s.session_id = r.session_id
$$;
COMMENT ON FUNCTION memory_lexical_branch(text, text[], double precision, double precision, double precision[],
                                          tsquery, tsquery, boolean, integer, uuid[], boolean,
                                          text, vector, text, memory_filter) IS
    'The lexical branch of search_memories, from the stored context windows (memory_contexts; made from '
    'memories while a migration fills them): its candidates are the windows that hold the terms '
    'memory_term_plan looks up (p_query, p_scan, at most p_candidates), of the types searched and '
    'meeting p_filter, and, past ranking_weight(''common'') memories, of those the '
    'ranking_weight(''lexical_pool'') best by their window''s BM25; with the nearest by vector, '
    'p_nearest (with p_rrf only those whose windows hold the terms). Each with BM25 of the memory (own), '
    'of its context window as one text (context: the memories around it in its '
    'session) and of its session (session_terms), all with the user''s idf of live memories; most is what '
    'BM25 could give the query terms the candidates hold; kept when it meets the search''s filters; and '
    'what the ranking reads of the memory and its cosine.';

DROP FUNCTION IF EXISTS search_memories_by_vector(text, text, vector, integer, text[], text, timestamptz,
                                                 timestamptz, double precision, text, text, timestamptz,
                                                 timestamptz, timestamptz, integer, integer, text, jsonpath, jsonb);
CREATE OR REPLACE FUNCTION search_memories_by_vector(
    p_user_id text, p_model text, p_query vector, p_limit integer DEFAULT 10,
    p_filter memory_filter DEFAULT NULL, p_space text DEFAULT 'text', p_now timestamptz DEFAULT now(),
    p_time_from timestamptz DEFAULT NULL, p_time_to timestamptz DEFAULT NULL, p_per_type integer DEFAULT NULL,
    p_pool integer DEFAULT NULL)
RETURNS SETOF memory_hit
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
SET plan_cache_mode = force_generic_plan  -- as search_memories: one plan for every user
SET jit = off
SET enable_sort = on
SET enable_seqscan = on
AS $$
BEGIN
    PERFORM _require_range(p_limit, 'limit', 1, 1000),
            _require_choice(p_space, 'space', ARRAY['text', 'embedding', 'text_embedding']);
    RETURN QUERY
    WITH by_vector AS MATERIALIZED (  -- the limit (recency and importance then reorder within it), or
                                      -- the pool when a time range may lift one
        SELECT v.id, v.vector_score
        FROM memory_vector_pool(
            p_user_id => p_user_id, p_model => p_model, p_query => p_query,
            p_pool => coalesce(p_pool, CASE WHEN p_time_from IS NULL THEN p_limit ELSE hybrid_vector_pool(p_limit) END),
            p_types => CASE WHEN p_space = 'text'
                            THEN array_remove(coalesce((p_filter).memory_types, ARRAY['episodic', 'semantic']),
                                              'perceptual')
                            ELSE (p_filter).memory_types END,
            p_perceptual => ((p_filter).memory_types IS NULL OR 'perceptual' = ANY ((p_filter).memory_types))
                            AND EXISTS (SELECT 1 FROM memories m  -- skip an empty vector search
                                        WHERE m.user_id = p_user_id AND m.memory_type = 'perceptual'
                                          AND m.forgotten_at IS NULL),
            p_space => p_space, p_filter => p_filter) AS v
    ), components AS (
        SELECT m.id, m.memory_type, m.content, m.importance, m.session_id, m.modality, m.metadata,
               m.created_at, greatest(0, v.vector_score) AS vector_raw,
               in_time_range(m.created_at, p_time_from, p_time_to) AS in_time,
               memory_recency(p_now, m.created_at) AS recency
        FROM by_vector v
        CROSS JOIN LATERAL (SELECT * FROM memories x WHERE x.user_id = p_user_id AND x.id = v.id OFFSET 0) AS m
        WHERE m.forgotten_at IS NULL
          AND ((p_filter).memory_types IS NULL OR m.memory_type = ANY ((p_filter).memory_types))
    ), scored AS (
        SELECT r.*, ranking_score(vector_relevance(r.vector_n, r.in_time), r.recency, r.importance) AS final
        FROM (SELECT c.*, coalesce(c.vector_raw / nullif(max(c.vector_raw) OVER (), 0), 0) AS vector_n
              FROM components c) AS r
    )
    SELECT b.id, b.memory_type, b.content, b.importance, b.session_id, b.modality, b.metadata, b.created_at,
           b.vector_n::double precision, 0::double precision, 0::double precision, 0::double precision,
           0::double precision, 0::double precision, b.in_time::double precision,
           b.recency::double precision, importance_weight(b.importance), b.final::double precision
    FROM (SELECT s.*, row_number() OVER (PARTITION BY s.memory_type ORDER BY s.final DESC, s.id) AS type_rank
          FROM scored s) AS b
    WHERE p_per_type IS NULL OR b.type_rank <= p_per_type
    ORDER BY b.final DESC, b.id
    LIMIT p_limit;
END $$;
COMMENT ON FUNCTION search_memories_by_vector(text, text, vector, integer, memory_filter, text, timestamptz,
                                              timestamptz, timestamptz, integer, integer) IS
    'search_memories(p_mode => ''vector''): the nearest memories by vector (memory_vector_pool), each '
    'cosine over the best''s, plus the time range''s weight inside a range the query names; recency '
    'and importance break near-ties; p_per_type caps each memory type.';

-- search_memories ranks a user's long-term memories of any types in one statement, from stages
-- that are functions of their own (each can be called alone):
--   memory_term_plan       how the query's terms find candidates: every match when the user has
--                          few memories; else the memories with a term that is not common (in at
--                          most ranking_weight('common') of them), or, when every term is common, at
--                          most that many memories with all of them
--   memory_vector_pool     the nearest by vector (memory_candidates, HNSW): episodic and semantic
--                          memories by their text vector, perceptual ones by their description's
--   memory_lexical_branch  the lexical candidates: the stored context windows (memory_contexts)
--                          that hold the query's terms, and the nearest by vector (an answer's
--                          context is the question turn before it): BM25 of the memory, of its
--                          context window (itself and the memories around it in its session) and
--                          of its session
--   specific_entities, graph_memories  for semantic memories, the knowledge-graph expansion of the
--                          entities the query names that are specific
-- Each component is normalised by its best value among the candidates, then weighed by name
-- (ranking_weights() holds every weight; lexical_relevance, fusion_vector_weight, fused_relevance):
--   relevance = lexical × lexical_relevance(own, context, session, speaker) + w × vector
--               (+ graph × the graph's expansion, + in_time inside the time range the query names)
-- where p_fusion => 'spread' (models of meaning) puts the cosine on the candidates' range
-- (spread_score) and weighs it w × (1 − how much of the query the best lexical match holds) × (1 −
-- the correlation of the cosine with the lexical ranking); 'minmax' puts each memory's own cosine
-- on that range at w (a question that asks for a count: "how many…"); 'weighted' divides it by the
-- best; 'rrf' ranks by reciprocal ranks, the lexical branch holding only the memories with a
-- query term in their context windows. w is p_vector_weight, or the fusion's own. Recency and
-- importance only break near-ties (ranking_score). p_mode => 'lexical' or 'vector' keeps one branch
-- (search_memories_by_vector). The reference's formulas stay in search_by_recency and search_semantic.
DROP FUNCTION IF EXISTS search_memories(text, text, vector, text, integer, text[], text, timestamptz, timestamptz,
                                          double precision, text, text, timestamptz, text[], text[], integer,
                                          timestamptz, timestamptz, text, text, integer, integer, text, jsonpath,
                                          jsonb, double precision, uuid[], double precision[]);
CREATE OR REPLACE FUNCTION search_memories(
    p_user_id text, p_model text, p_query vector, p_query_text text, p_limit integer DEFAULT 10,
    p_filter memory_filter DEFAULT NULL, p_space text DEFAULT 'text', p_now timestamptz DEFAULT now(),
    p_names text[] DEFAULT NULL, p_seeds text[] DEFAULT NULL, p_max_hops integer DEFAULT 2,
    p_time_from timestamptz DEFAULT NULL, p_time_to timestamptz DEFAULT NULL,
    p_mode text DEFAULT 'hybrid', p_fusion text DEFAULT 'weighted', p_per_type integer DEFAULT NULL,
    p_pool integer DEFAULT NULL, p_vector_weight double precision DEFAULT NULL,
    p_nearest uuid[] DEFAULT NULL, p_nearest_cosines double precision[] DEFAULT NULL)
RETURNS SETOF memory_hit
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
DECLARE
    v_terms text[] := CASE WHEN p_mode <> 'vector' THEN query_terms(coalesce(p_query_text, '')) END;
    v_plan record;
    v_pool integer := coalesce(p_pool, hybrid_vector_pool(p_limit));
    v_types text[] := CASE WHEN p_space = 'text'  -- the types searched by their embedding
                           THEN array_remove(coalesce((p_filter).memory_types, ARRAY['episodic', 'semantic']), 'perceptual')
                           ELSE (p_filter).memory_types END;
    v_perceptual boolean := (p_filter).memory_types IS NULL OR 'perceptual' = ANY ((p_filter).memory_types);
    v_seeds text[];
    v_nearest uuid[];  -- the vector branch's candidates, their cosines, which are core, and those
    v_cosines double precision[];
    v_core boolean[];
    v_core_ids uuid[];
BEGIN
    PERFORM _require_range(p_limit, 'limit', 1, 1000), _require_range(coalesce(p_vector_weight, 0), 'vector_weight', 0, 10),
            _require_choice(p_mode, 'mode', ARRAY['hybrid', 'lexical', 'vector']),
            _require_choice(p_fusion, 'fusion', ARRAY['weighted', 'spread', 'minmax', 'rrf']),
            _require_choice(p_space, 'space', ARRAY['text', 'embedding', 'text_embedding']);
    IF p_mode = 'vector' THEN
        RETURN QUERY SELECT * FROM search_memories_by_vector(
            p_user_id => p_user_id, p_model => p_model, p_query => p_query, p_limit => p_limit,
            p_filter => p_filter, p_space => p_space, p_now => p_now, p_time_from => p_time_from,
            p_time_to => p_time_to, p_per_type => p_per_type, p_pool => p_pool);
        RETURN;
    END IF;
    SELECT * INTO v_plan FROM memory_term_plan(p_user_id, v_terms);
    IF coalesce(array_length(p_seeds, 1), 0) > 0
       AND ((p_filter).memory_types IS NULL OR 'semantic' = ANY ((p_filter).memory_types)) THEN
        v_seeds := specific_entities(p_user_id, p_seeds, v_plan.documents);
    END IF;
    v_perceptual := v_perceptual AND p_mode <> 'lexical' AND EXISTS (  -- skip an empty vector search
        SELECT 1 FROM memories m
        WHERE m.user_id = p_user_id AND m.memory_type = 'perceptual' AND m.forgotten_at IS NULL);
    IF p_mode <> 'lexical' THEN
        SELECT array_agg(v.id), array_agg(v.vector_score), array_agg(v.core), array_agg(v.id) FILTER (WHERE v.core)
        INTO v_nearest, v_cosines, v_core, v_core_ids
        FROM (SELECT * FROM memory_vector_pool(p_user_id => p_user_id, p_model => p_model, p_query => p_query,
                                               p_pool => v_pool, p_types => v_types, p_perceptual => v_perceptual,
                                               p_space => p_space, p_filter => p_filter)
              WHERE p_nearest IS NULL
              UNION ALL  -- the caller's scan of the same pool (the API's planned statement)
              SELECT n.*, row_number() OVER (ORDER BY n.cosine DESC, n.id) <= ranking_weight('nearest')::integer
              FROM unnest(p_nearest, p_nearest_cosines) AS n(id, cosine) WHERE p_nearest IS NOT NULL) AS v;
    END IF;
    RETURN QUERY
    WITH by_vector AS MATERIALIZED (
        SELECT v.* FROM unnest(v_nearest, v_cosines, v_core) AS v(id, vector_score, core)
    ), lexical AS MATERIALIZED (
        SELECT l.* FROM memory_lexical_branch(
            p_user_id => p_user_id, p_terms => v_terms, p_documents => v_plan.documents,
            p_average => v_plan.average, p_df => v_plan.df, p_query => v_plan.query, p_scan => v_plan.scan,
            p_narrowed => v_plan.narrowed, p_candidates => v_plan.candidates, p_nearest => v_core_ids,
            p_rrf => p_fusion = 'rrf', p_model => p_model, p_query_vector => p_query, p_space => p_space,
            p_filter => p_filter) AS l
    ), found AS (  -- each candidate once: no join of the steps above, whose sizes the planner cannot know
        SELECT s.id, max(s.vector_score) AS vector_score, bool_or(s.core) AS core, max(s.graph) AS graph
        FROM (SELECT v.id, v.vector_score, v.core, NULL::double precision AS graph FROM by_vector v
              UNION ALL SELECT l.id, NULL, true, NULL FROM lexical l
              UNION ALL SELECT g.memory_id, NULL, false, g.graph_score
                        FROM graph_memories(p_user_id, v_seeds, p_max_hops, v_pool) AS g WHERE v_seeds IS NOT NULL) AS s
        GROUP BY s.id
    ), components AS (  -- numbers only: the text is read for the winners alone; a memory the lexical
                        -- branch did not read is read by key, and meets the filters here
        SELECT f.id, f.core, coalesce(f.graph, 0) AS graph,
               coalesce(k.memory_type, m.memory_type) AS memory_type,
               coalesce(k.importance, m.importance) AS importance, coalesce(k.own, 0) AS own,
               coalesce(k.context, 0) AS context, CASE WHEN k.own > 0 THEN coalesce(k.session, 0) ELSE 0 END AS session,
               CASE WHEN k.own > 0 AND lower(k.speaker) = ANY (p_names) THEN 1.0 ELSE 0.0 END AS speaker, k.most,
               greatest(0, coalesce(f.vector_score, CASE WHEN p_mode = 'lexical' THEN 0 ELSE coalesce(k.similarity,
                   memory_similarity(m.memory_type, m.embedding_model, m.embedding, m.text_embedding_model,
                                     m.text_embedding, p_model, p_query, p_space)) END)) AS vector_raw,
               in_time_range(coalesce(k.created_at, m.created_at), p_time_from, p_time_to) AS in_time,
               memory_recency(p_now, coalesce(k.created_at, m.created_at)) AS recency
        FROM found f
        LEFT JOIN lexical k ON k.id = f.id
        LEFT JOIN LATERAL (SELECT * FROM memories x
                           WHERE k.id IS NULL AND x.user_id = p_user_id AND x.id = f.id OFFSET 0) AS m ON true
        WHERE coalesce(k.kept, m.forgotten_at IS NULL
                               AND _passes_filters(m.memory_type, m.session_id, m.created_at, m.importance, m.modality,
                                                   m.metadata, p_filter))
    ), normalised AS (  -- over the best candidate's (spread, minmax: on the candidates' range)
        SELECT c.*,
               CASE WHEN p_fusion IN ('spread', 'minmax')
                    THEN spread_score(c.vector_raw, max(c.vector_raw) OVER (),
                                      min(c.vector_raw) FILTER (WHERE c.vector_raw > 0 AND c.core) OVER ())
                    ELSE c.vector_raw / nullif(max(c.vector_raw) OVER (), 0) END AS vector_n,
               c.own / nullif(max(c.own) OVER (), 0) AS own_n, c.context / nullif(max(c.context) OVER (), 0) AS context_n,
               c.session / nullif(max(c.session) OVER (), 0) AS session_n,
               least(1, coalesce(max(c.own) OVER () / nullif(max(c.most) OVER (), 0), 0)) AS held
        FROM components c
    ), fused AS (
        SELECT n.*, lexical_relevance(n.own_n, n.context_n, n.session_n, n.speaker) AS lexical FROM normalised n
    ), scored AS (
        SELECT r.*, ranking_score(fused_relevance(
                   CASE WHEN p_mode = 'hybrid' THEN p_fusion ELSE p_mode END, r.lexical, r.vector_n,
                   fusion_vector_weight(p_fusion, p_vector_weight, r.held,
                                        corr(r.lexical, r.vector_raw) FILTER (WHERE r.vector_raw > 0 AND r.core) OVER ()),
                   CASE WHEN r.lexical > 0 THEN rank() OVER (ORDER BY r.lexical DESC) END,
                   CASE WHEN r.vector_raw > 0 THEN rank() OVER (ORDER BY r.vector_raw DESC) END,
                   r.graph, r.in_time), r.recency, r.importance) AS final
        FROM fused r
    ), best AS (
        SELECT r.*
        FROM (SELECT r.*, row_number() OVER (PARTITION BY r.memory_type ORDER BY r.final DESC, r.id) AS type_rank
              FROM scored r) AS r
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
COMMENT ON FUNCTION search_memories(text, text, vector, text, integer, memory_filter, text, timestamptz, text[],
                                   text[], integer, timestamptz, timestamptz, text, text, integer, integer,
                                   double precision, uuid[], double precision[]) IS
    'Hybrid search of one user''s long-term memories, composed of stages that are functions of their '
    'own (memory_term_plan, memory_vector_pool, memory_lexical_branch, graph_memories; sql/search.sql '
    'explains it): BM25 of the memory, of its context window (the memories around it in its session) '
    'and of its session, a speaker the query names, cosine similarity, '
    'knowledge-graph expansion for semantic memories and a time range the query names; each '
    'component normalised by its best candidate, weighed by ranking_weights(); recency and importance '
    'only break near-ties. p_mode hybrid, lexical or vector (search_memories_by_vector); p_fusion '
    'weighted, spread (the cosine spread over the candidates, weighed down as the best lexical match '
    'holds the query and as the vector agrees with the lexical ranking), minmax (each memory''s own cosine spread, undamped) or rrf; p_vector_weight the vector''s '
    'weight (NULL: the fusion''s own); p_per_type caps each memory type; p_filter (memory_filter(…): '
    'types, session or session prefix, time range, least importance, modality, a jsonpath predicate on '
    'the metadata) keeps the candidates before any limit; p_nearest and p_nearest_cosines, the vector branch''s pool of an unfiltered search of '
    'episodic and semantic memories as memory_candidates would find it (hybrid_vector_pool() of them, '
    'nearest first), spare the function that scan. Every component is returned.';

-- The reference's episodic and perceptual searches: limit * 5 candidates nearest by vector with the
-- filters inside, each scored (vector_score * 0.8 + recency * 0.2) * importance_weight; episodic
-- recency counts days, perceptual recency hours (floored at 0.1).
CREATE OR REPLACE FUNCTION search_by_recency(
    p_user_id text, p_model text, p_query vector, p_memory_type text DEFAULT 'episodic',
    p_limit integer DEFAULT 5, p_session_id text DEFAULT NULL, p_modality text DEFAULT NULL,
    p_since timestamptz DEFAULT NULL, p_until timestamptz DEFAULT NULL,
    p_min_importance double precision DEFAULT NULL, p_now timestamptz DEFAULT now(),
    p_space text DEFAULT 'embedding')
RETURNS TABLE (id uuid, memory_type text, content text, importance double precision,
               session_id text, modality text, metadata jsonb, created_at timestamptz,
               vector_score double precision, recency_score double precision,
               importance_weight double precision, score double precision)
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
SET jit = off  -- compiling costs more than running (docs/search.md)
AS $$
#variable_conflict use_column
BEGIN
    IF p_memory_type IS NULL OR p_memory_type NOT IN ('episodic', 'perceptual') THEN
        RAISE EXCEPTION 'memory_type must be episodic or perceptual, got %',
            coalesce(quote_literal(p_memory_type), 'NULL') USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM _require_range(p_limit, 'limit', 1, 1000);
    RETURN QUERY
    SELECT m.id, m.memory_type, m.content, m.importance, m.session_id, m.modality, m.metadata,
           m.created_at, c.vector_score, r.recency, importance_weight(m.importance),
           episodic_score(greatest(-1, least(1, c.vector_score)), r.recency, m.importance)
    FROM memory_candidates(p_user_id, p_model, p_query, p_limit * 5,
                           memory_filter(p_memory_types => ARRAY[p_memory_type], p_session_id => p_session_id,
                                         p_since => p_since, p_until => p_until,
                                         p_min_importance => p_min_importance, p_modality => p_modality),
                           p_space) AS c
    JOIN memories m ON m.user_id = p_user_id AND m.id = c.id
    CROSS JOIN LATERAL (
        SELECT CASE p_memory_type
                   WHEN 'episodic'
                   THEN episodic_recency(greatest(0, extract(epoch FROM p_now - m.created_at)::float8 / 86400))
                   ELSE perceptual_recency(greatest(0, extract(epoch FROM p_now - m.created_at)::float8 / 3600))
               END AS recency) AS r
    ORDER BY 12 DESC, 1
    LIMIT p_limit;
END $$;
COMMENT ON FUNCTION search_by_recency(text, text, vector, text, integer, text, text, timestamptz,
                                      timestamptz, double precision, timestamptz, text) IS
    'The reference''s ranked episodic or perceptual search (p_memory_type): candidates = limit * 5 '
    'nearest by vector (p_model, p_space embedding or text_embedding) with the filters inside, '
    'score = (vector_score * 0.8 + recency * 0.2) * importance_weight, recency = 1 / (1 + age_days) '
    'for episodic memories, max(0.1, exp(-0.1 * age_hours / 24)) for perceptual ones, at p_now. '
    'Returns each score component.';

CREATE OR REPLACE FUNCTION search_semantic(
    p_user_id text, p_model text, p_query vector, p_seeds text[], p_limit integer DEFAULT 5,
    p_max_hops integer DEFAULT 2, p_since timestamptz DEFAULT NULL, p_until timestamptz DEFAULT NULL,
    p_min_importance double precision DEFAULT NULL)
RETURNS TABLE (id uuid, memory_type text, content text, importance double precision,
               session_id text, metadata jsonb, created_at timestamptz,
               vector_score double precision, graph_score double precision,
               importance_weight double precision, score double precision)
LANGUAGE sql STABLE SET search_path FROM CURRENT
SET jit = off  -- compiling costs more than running (docs/search.md)
AS $$
    WITH by_vector AS (
        SELECT c.id, c.vector_score
        FROM memory_candidates(p_user_id, p_model, p_query,
                               _require_range(p_limit, 'limit', 1, 1000)::integer * 5,
                               memory_filter(p_memory_types => ARRAY['semantic'], p_since => p_since,
                                             p_until => p_until, p_min_importance => p_min_importance)) AS c
    ), by_graph AS (
        SELECT g.memory_id AS id, g.graph_score
        FROM graph_memories(p_user_id, p_seeds, p_max_hops, p_limit * 5) AS g
        WHERE coalesce(array_length(p_seeds, 1), 0) > 0
    ), merged AS (
        SELECT coalesce(v.id, g.id) AS id, v.vector_score, coalesce(g.graph_score, 0) AS graph_score
        FROM by_vector v FULL OUTER JOIN by_graph g ON g.id = v.id
    )
    SELECT m.id, m.memory_type, m.content, m.importance, m.session_id, m.metadata, m.created_at,
           s.vector_score, x.graph_score, importance_weight(m.importance),
           semantic_score(s.vector_score, x.graph_score, m.importance)
    FROM merged x
    JOIN memories m ON m.user_id = p_user_id AND m.id = x.id
    CROSS JOIN LATERAL (
        SELECT greatest(-1, least(1, coalesce(x.vector_score,
            CASE WHEN m.embedding_model = p_model THEN 1 - (m.embedding <=> p_query) ELSE 0 END)))
            AS vector_score) AS s
    WHERE _passes_filters(m.memory_type, m.session_id, m.created_at, m.importance, m.modality, m.metadata,
                          memory_filter(p_since => p_since, p_until => p_until, p_min_importance => p_min_importance))
    ORDER BY 11 DESC, 1
    LIMIT p_limit
$$;
COMMENT ON FUNCTION search_semantic(text, text, vector, text[], integer, integer, timestamptz,
                                   timestamptz, double precision) IS
    'Ranked semantic search: limit * 5 candidates by vector and limit * 5 by the knowledge graph '
    '(graph_memories from the seed entities), merged by memory id; score = (vector_score * 0.7 + '
    'graph_score * 0.3) * importance_weight. A graph-only hit gets its real cosine similarity.';

CREATE OR REPLACE FUNCTION search_chunks(
    p_namespace text, p_model text, p_query vector, p_query_text text, p_limit integer DEFAULT 5,
    p_document_ids text[] DEFAULT NULL, p_fusion text DEFAULT 'rrf', p_pool integer DEFAULT NULL)
RETURNS TABLE (id uuid, document_id text, "position" integer, content text, heading_path text[],
               start_char integer, end_char integer, source_path text,
               vector_score double precision, text_score double precision, score double precision)
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
SET jit = off  -- compiling costs more than running (docs/search.md)
SET hnsw.iterative_scan = 'relaxed_order'
SET hnsw.ef_search = 40
AS $$
#variable_conflict use_column
DECLARE
    v_dimension integer;
    v_type text;
    v_pool integer := coalesce(p_pool, p_limit * ranking_weight('chunk_pool')::integer);
    v_terms text[] := query_terms(coalesce(p_query_text, ''));
    v_query tsquery;  -- the chunks the lexical branch scores
    v_documents double precision;
    v_average double precision;
    v_cap integer := greatest(ranking_weight('common')::integer, v_pool * ranking_weight('chunk_common')::integer);
    v_df double precision[];  -- each term's document frequency (estimated for common terms)
    v_rare text[];
    v_common text[];
    v_candidates integer;  -- at most this many lexical candidates (NULL: every match)
    v_stat_terms text[];  -- the query terms the planner's statistics know, and their frequencies
    v_stat_freqs real[];
BEGIN
    PERFORM _require_text(p_namespace, 'namespace');
    PERFORM _require_range(p_limit, 'limit', 1, 1000);
    IF v_pool NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'pool must be between 1 and 10000, got %', v_pool USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF p_fusion IS NULL OR p_fusion NOT IN ('rrf', 'weighted', 'lexical') THEN
        RAISE EXCEPTION 'fusion must be rrf, weighted or lexical, got %', coalesce(quote_literal(p_fusion), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    v_dimension := _query_dimension(p_model, p_query);
    SELECT greatest(t.chunks, 1), greatest(t.terms::double precision / greatest(t.chunks, 1), 1)
    INTO v_documents, v_average
    FROM chunk_text_totals t WHERE t.namespace = p_namespace;
    IF cardinality(v_terms) > 0 AND v_documents IS NOT NULL THEN
        -- Each term's chunks are counted up to the cap (a GIN scan that stops there). The lexical
        -- branch scores the chunks that hold a rarer term; when every term found is common (in
        -- more chunks than the cap), the chunks that hold all of those, at most the cap. A common term's
        -- frequency comes from the planner's statistics of the column (most_common_elem_freqs),
        -- read in a statement of its own (Citus cannot join a catalog view with distributed tables).
        SELECT array_agg(e.elem), array_agg(e.freq) INTO v_stat_terms, v_stat_freqs
        FROM pg_stats s, unnest(s.most_common_elems::text::text[], s.most_common_elem_freqs) AS e(elem, freq)
        WHERE s.schemaname = current_schema() AND s.tablename = 'chunks' AND s.attname = 'lexemes'
          AND e.elem = ANY (v_terms);
        SELECT array_agg(CASE WHEN n.hits <= v_cap THEN n.hits
                              ELSE greatest(v_cap + 1, coalesce(f.freq, 0) * v_documents) END ORDER BY t.ord),
               array_agg(t.term ORDER BY t.ord) FILTER (WHERE n.hits BETWEEN 1 AND v_cap),
               array_agg(t.term ORDER BY t.ord) FILTER (WHERE n.hits > v_cap)
        INTO v_df, v_rare, v_common
        FROM unnest(v_terms) WITH ORDINALITY AS t(term, ord)
        CROSS JOIN LATERAL (
            SELECT count(*)::double precision AS hits
            FROM (SELECT 1 FROM chunks c
                  WHERE c.namespace = p_namespace AND c.lexemes @@ terms_query(ARRAY[t.term])
                    AND (p_document_ids IS NULL OR c.document_id = ANY (p_document_ids))
                  LIMIT v_cap + 1) AS x) AS n
        LEFT JOIN LATERAL (
            SELECT e.freq FROM unnest(v_stat_terms, v_stat_freqs) AS e(elem, freq) WHERE e.elem = t.term
        ) AS f ON n.hits > v_cap;
        IF v_rare IS NOT NULL THEN
            v_query := terms_query(v_rare);
        ELSE
            v_query := (SELECT to_tsquery('simple'::regconfig, string_agg(quote_literal(x), ' & ')) FROM unnest(v_common) AS x);
            v_candidates := v_cap;
        END IF;
    END IF;
    PERFORM set_config('hnsw.ef_search', least(1000, greatest(40, 2 * v_pool))::text, true);
    v_type := vector_type_for(v_dimension);
    RETURN QUERY EXECUTE format($sql$
        WITH nearest AS MATERIALIZED (
            SELECT c.id, c.embedding::%1$s(%2$s) <=> $2::%1$s(%2$s) AS distance
            FROM chunks c
            WHERE c.namespace = $1 AND c.embedding_model = %3$L AND $6 <> 'lexical'
              AND ($4::text[] IS NULL OR c.document_id = ANY ($4))
            ORDER BY c.embedding::%1$s(%2$s) <=> $2::%1$s(%2$s)
            LIMIT $5
        ), by_vector AS (
            SELECT n.id, 1 - n.distance AS vector_score FROM nearest n
        ), capped AS MATERIALIZED (  -- the chunks that hold the candidate terms (at most the cap)
            SELECT c.id
            FROM chunks c
            WHERE $8::tsquery IS NOT NULL AND $9::double precision IS NOT NULL
              AND c.namespace = $1 AND c.lexemes @@ $8 AND ($4::text[] IS NULL OR c.document_id = ANY ($4))
            LIMIT $12
        ), matching AS MATERIALIZED (  -- those and the nearest that hold them, with their query terms
            SELECT c.id, ts_filter(setweight(c.lexemes, 'A', $11), '{a}') AS hits, c.term_count
            FROM (SELECT x.id FROM capped x
                  UNION SELECT n.id FROM nearest n WHERE $8::tsquery IS NOT NULL AND $12 IS NOT NULL) AS picked
            JOIN chunks c ON c.namespace = $1 AND c.id = picked.id
            WHERE c.lexemes @@ $8 AND $9::double precision IS NOT NULL
        ), term_frequency AS (
            SELECT m.id, m.term_count, u.lexeme, coalesce(array_length(u.positions, 1), 1) AS tf
            FROM matching m, unnest(m.hits) AS u
        ), idf AS (
            SELECT t.lexeme, bm25_idf($9, t.df) AS w FROM unnest($11, $13) AS t(lexeme, df)
        ), by_text AS (
            SELECT s.id, s.bm25 AS text_score, row_number() OVER (ORDER BY s.bm25 DESC, s.id) AS rank
            FROM (SELECT f.id, sum(bm25(i.w, f.tf, f.term_count, $10)) AS bm25
                  FROM term_frequency f JOIN idf i USING (lexeme) GROUP BY f.id) AS s
            ORDER BY s.bm25 DESC, s.id
            LIMIT $5
        ), fused AS (
            SELECT coalesce(v.id, t.id) AS id, v.vector_score, t.rank AS text_rank,
                   coalesce(t.text_score / nullif(max(t.text_score) OVER (), 0), 0) AS text_score
            FROM by_vector v FULL OUTER JOIN by_text t ON t.id = v.id
        ), measured AS (  -- every candidate's cosine, and its rank by it among them all: a keyword
                          -- hit beyond the nearest still has its place in the vector's ranking
            SELECT f.id, f.text_score, f.text_rank, s.vector_score,
                   row_number() OVER (ORDER BY s.vector_score DESC, f.id) AS vector_rank
            FROM fused f
            JOIN chunks c ON c.namespace = $1 AND c.id = f.id
            CROSS JOIN LATERAL (SELECT coalesce(f.vector_score,
                CASE WHEN c.embedding_model = %3$L AND $6 <> 'lexical' THEN 1 - (c.embedding <=> $2) ELSE 0 END)::double precision
                AS vector_score) s
        )
        SELECT c.id, c.document_id, c.position, c.content, c.heading_path, c.start_char, c.end_char,
               d.source_path, m.vector_score, m.text_score::double precision,
               (CASE WHEN $6 = 'weighted'
                     THEN ranking_weight('chunk_vector') * m.vector_score
                          + (1 - ranking_weight('chunk_vector')) * m.text_score
                     ELSE CASE WHEN m.vector_score > 0 THEN 1.0 / (ranking_weight('rrf_k') + m.vector_rank) ELSE 0 END
                          + coalesce(1.0 / (ranking_weight('rrf_k') + m.text_rank), 0) END)::double precision
        FROM measured m
        JOIN chunks c ON c.namespace = $1 AND c.id = m.id
        JOIN documents d ON d.namespace = c.namespace AND d.id = c.document_id
        ORDER BY 11 DESC, c.id
        LIMIT $7
        $sql$, v_type, v_dimension, p_model)
    USING p_namespace, p_query, coalesce(p_query_text, ''), p_document_ids, v_pool, p_fusion, p_limit,
          v_query, v_documents, v_average, v_terms, v_candidates, v_df;
END $$;
COMMENT ON FUNCTION search_chunks(text, text, vector, text, integer, text[], text, integer) IS
    'Hybrid chunk search in one namespace (optionally some documents): the pool (limit * 4 by '
    'default) nearest chunks by vector and the pool best by BM25 over the chunks'' lexemes '
    '(language-aware, CJK as character pairs; text_score is normalised by the best; the chunks '
    'scored are those with a term in at most max(200, 10 * pool) chunks, or, when every term is '
    'that common, at most that many chunks with every term and the nearest chunks that have them), fused by '
    'reciprocal rank fusion (k = 60, default; each candidate ranked by its cosine among them all, so a '
    'keyword hit beyond the nearest keeps its place) or by 0.7 * vector_score + 0.3 * text_score; lexical: '
    'the BM25 branch alone (a query that could not be embedded; vector_score 0). '
    'vector_score is the cosine similarity, computed for keyword-only hits too (0 for a chunk still '
    'waiting for its vector).';

-- Whole sessions ranked as documents (sql/sessions.sql): the sessions that hold a query term that
-- is not in most of them, and the sessions of the memories nearest by vector, each scored by its
-- BM25 as one text (over the best candidate's) plus p_vector_weight (ranking_weight('session_vector')
-- by default) times its summed vector's cosine, spread over the candidates (spread_score: the least
-- as 0, the best as 1, so a model whose cosines barely differ reorders little).
CREATE OR REPLACE FUNCTION search_sessions(
    p_user_id text, p_model text, p_query vector, p_query_text text, p_limit integer DEFAULT 5,
    p_vector_weight double precision DEFAULT NULL, p_pool integer DEFAULT NULL)
RETURNS TABLE (session_id text, text_score double precision, vector_score double precision,
               score double precision)
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
SET jit = off  -- compiling costs more than running (docs/search.md)
AS $$
#variable_conflict use_column
DECLARE
    v_terms text[] := query_terms(coalesce(p_query_text, ''));
    v_sessions double precision;
    v_weight double precision := coalesce(p_vector_weight, ranking_weight('session_vector'));
    v_most double precision;  -- a term in more sessions than this is in most of them
BEGIN
    PERFORM _require_text(p_user_id, 'user_id');
    PERFORM _require_range(p_limit, 'limit', 1, 1000);
    PERFORM _require_range(v_weight, 'vector_weight', 0, 10);
    SELECT greatest(t.sessions, 1) INTO v_sessions FROM memory_text_totals t WHERE t.user_id = p_user_id;
    v_most := v_sessions * ranking_weight('session_common');
    RETURN QUERY
    WITH telling AS (  -- the query terms that are not in most sessions
        SELECT x.term
        FROM unnest(v_terms) AS x(term)
        WHERE (SELECT count(*) FROM (SELECT 1 FROM session_terms s
                                     WHERE s.user_id = p_user_id AND s.lexeme = x.term
                                     LIMIT ceil(v_most)::integer + 1) AS c) <= greatest(v_most, 1)
    ), candidates AS (
        SELECT DISTINCT s.session_id
        FROM session_terms s
        WHERE s.user_id = p_user_id AND s.lexeme IN (SELECT term FROM telling)
        UNION
        SELECT m.session_id
        FROM memory_candidates(p_user_id, p_model, p_query, coalesce(p_pool, ranking_weight('nearest')::integer),
                               memory_filter(p_memory_types => ARRAY['episodic', 'semantic'])) AS c
        JOIN memories m ON m.user_id = p_user_id AND m.id = c.id
        WHERE m.session_id IS NOT NULL
    ), scored AS (
        SELECT s.session_id, s.bm25, s.similarity
        FROM session_scores(p_user_id, p_model, p_query, v_terms,
                            ARRAY(SELECT c.session_id FROM candidates c)) AS s
    ), spread AS (
        SELECT s.*,
               coalesce(s.bm25 / nullif(max(s.bm25) OVER (), 0), 0) AS text_n,
               spread_score(s.similarity, max(s.similarity) OVER (), min(s.similarity) OVER ()) AS vector_n
        FROM scored s
    )
    SELECT p.session_id, p.text_n, p.vector_n, p.text_n + v_weight * p.vector_n
    FROM spread p
    ORDER BY p.text_n + v_weight * p.vector_n DESC, p.session_id
    LIMIT p_limit;
END $$;
COMMENT ON FUNCTION search_sessions(text, text, vector, text, integer, double precision, integer) IS
    'The p_limit sessions of a user that best match a query as whole documents: BM25 of the session '
    '(text_score, over the best candidate''s) plus p_vector_weight times the cosine of its summed '
    'vector spread over the candidates (vector_score); candidates are the sessions holding a query '
    'term not in most of them and those of the p_pool (ranking_weight(''nearest'')) memories nearest by vector.';
