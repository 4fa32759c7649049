-- The hybrid ranking's parts, each a function a DBA can call on its own: every weight, pool and cap
-- in one place (ranking_weights), BM25, the lexical relevance, the vector's normalisation and
-- weight, the fused relevance and the final score. search_memories (search.sql) composes them;
-- bench/twin.py is the same ranking in NumPy, and tests/test_ranking_twin.py holds the two equal.
-- Applied by every migration in which this file changed (sql/README.md).

CREATE OR REPLACE FUNCTION ranking_weights()
RETURNS TABLE (name text, value double precision, meaning text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    VALUES ('k1', 1.2, 'BM25: how fast a term''s repetitions stop adding'),
           ('b', 0.75, 'BM25: how much a document''s length discounts its terms'),
           ('own', 0.4, 'lexical relevance: the memory''s own BM25'),
           ('context', 0.6, 'lexical relevance: the BM25 of its context window (the memories around it, window)'),
           ('session', 0.3, 'lexical relevance: its session''s BM25'),
           ('speaker', 0.3, 'lexical relevance: a speaker the query names'),
           ('lexical', 0.8, 'fused relevance: the lexical relevance''s share'),
           ('vector_weighted', 0.2, 'the vector''s weight, weighted fusion (the hashing embedder)'),
           ('vector_spread', 0.5, 'the vector''s weight, spread fusion (models of meaning), before its damping'),
           ('vector_count', 1.0, 'the vector''s weight for a question that asks for a count (minmax)'),
           ('spread_floor', 0.05, 'spread: the least range of the cosines the normalisation divides by'),
           ('graph', 0.05, 'fused relevance: the knowledge graph''s expansion'),
           ('graph_decay', 0.5, 'graph: what a memory reached one relation further counts, each step'),
           ('in_time', 0.2, 'fused relevance: inside the time range the query names'),
           ('recency', 0.01, 'final score: recency, which only breaks near-ties'),
           ('importance', 0.01, 'final score: importance, which only breaks near-ties'),
           ('rrf_k', 60, 'rrf: the rank offset k'),
           ('rrf_scale', 30, 'rrf: the scale that puts its sum beside the other fusions'''),
           ('nearest', 40, 'the nearest memories by vector that take part in the fusion'),
           ('exact_scan', 2000, 'a user with at most this many live memories has the nearest read exactly, not '
                                'through the HNSW index (exact_scan_rows())'),
           ('window', 2, 'a context window: the memories on each side of a memory in its session that it holds '
                         '(memories_around; stored, so a change needs the windows made again)'),
           ('common', 200, 'a term in more of a user''s memories is common: its memories are no candidates'),
           ('lexical_pool', 80, 'the memories the terms find: at most this many, the best by their own BM25, have their '
                                 'context read (every match of a user of at most common memories)'),
           ('narrowed', 50, 'common terms only: the full-text index looks up terms until about this many rows'),
           ('specific_share', 0.05, 'graph: an entity mentioned by more of the memories is too common to expand from'),
           ('specific_least', 20, 'graph: unless it is mentioned by at most this many'),
           ('session_vector', 0.5, 'search_sessions: the weight of a session''s summed vector beside its BM25'),
           ('session_common', 0.5, 'search_sessions: a term in more of a user''s sessions finds no candidates'),
           ('chunk_vector', 0.7, 'search_chunks, weighted: the vector''s share (BM25 the rest)'),
           ('chunk_pool', 4, 'search_chunks: each branch''s pool, times the limit'),
           ('chunk_common', 10, 'search_chunks: a term in more chunks than this many pools (or common) is common'),
           ('chunk_heading', 2, 'a chunk''s lexemes: its heading path counted this many times (chunk_lexemes; '
                                 'stored, so a change needs the chunks rewritten)')
$$;
COMMENT ON FUNCTION ranking_weights() IS
    'Every weight, pool and cap of the hybrid rankings (memories, sessions, chunks), by name, with what '
    'it weighs (docs/search.md says how each was chosen).';

CREATE OR REPLACE FUNCTION ranking_weight(p_name text)
RETURNS double precision
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE  -- called with a constant name, it is a constant in the plan
SET search_path FROM CURRENT
AS $$
DECLARE
    v_value double precision;
BEGIN
    SELECT w.value INTO v_value FROM ranking_weights() w WHERE w.name = p_name;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no ranking weight named %', coalesce(quote_literal(p_name), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN v_value;
END $$;
COMMENT ON FUNCTION ranking_weight(text) IS
    'One weight of ranking_weights(), by name.';

CREATE OR REPLACE FUNCTION bm25_idf(p_documents double precision, p_df double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ln(1 + (p_documents - p_df + 0.5) / (p_df + 0.5));
COMMENT ON FUNCTION bm25_idf(double precision, double precision) IS
    'BM25''s inverse document frequency of a term in p_df of p_documents documents.';

CREATE OR REPLACE FUNCTION bm25(p_idf double precision, p_tf double precision, p_length double precision,
                                p_average double precision, p_normalised boolean DEFAULT true)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE  -- inlined where it is called, its weights constants
RETURN p_idf * p_tf * (ranking_weight('k1') + 1)
       / (p_tf + ranking_weight('k1') * CASE WHEN p_normalised
                                               THEN 1 - ranking_weight('b')
                                                    + ranking_weight('b') * p_length / p_average
                                               ELSE 1 END);
COMMENT ON FUNCTION bm25(double precision, double precision, double precision, double precision, boolean) IS
    'BM25 of one term: its idf, its frequency p_tf in a document of p_length terms where the '
    'average is p_average (p_normalised false: no length normalisation), k1 and b of ranking_weights().';

CREATE OR REPLACE FUNCTION bm25_most(p_idf double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN p_idf * (ranking_weight('k1') + 1);
COMMENT ON FUNCTION bm25_most(double precision) IS
    'The most BM25 can give terms whose idfs sum to p_idf (each term''s frequency without bound).';

CREATE OR REPLACE FUNCTION window_average(p_average double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (1 + 2 * ranking_weight('window')) * p_average;
COMMENT ON FUNCTION window_average(double precision) IS
    'The average length of a context window (the memory and ranking_weight(''window'') on each side), '
    'for memories of p_average terms: what BM25 normalises a window''s length by.';

CREATE OR REPLACE FUNCTION lexical_relevance(p_own double precision, p_context double precision,
                                             p_session double precision, p_speaker double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (ranking_weight('own') * coalesce(p_own, 0) + ranking_weight('context') * coalesce(p_context, 0)
        + ranking_weight('session') * coalesce(p_session, 0) + ranking_weight('speaker') * p_speaker)
       / (ranking_weight('own') + ranking_weight('context') + ranking_weight('session')
          + ranking_weight('speaker'));
COMMENT ON FUNCTION lexical_relevance(double precision, double precision, double precision, double precision) IS
    'The lexical relevance of a memory, from 0 to 1: its own BM25, its context window''s and its '
    'session''s, each over the best candidate''s, and 1 when its speaker is a name the query gives, '
    'weighed by ranking_weights().';

DROP FUNCTION IF EXISTS windowed_cosine(double precision, double precision, bigint);

CREATE OR REPLACE FUNCTION spread_score(p_value double precision, p_best double precision,
                                        p_least double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN greatest(0, 1 - (p_best - p_value) / greatest(p_best - p_least, ranking_weight('spread_floor')));
COMMENT ON FUNCTION spread_score(double precision, double precision, double precision) IS
    'A value on the candidates'' range: the best 1, the least 0; a range under spread_floor counts '
    'as spread_floor (near-constant values stay near 1).';

CREATE OR REPLACE FUNCTION fusion_vector_weight(p_fusion text, p_weight double precision, p_held double precision,
                                                p_agreement double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN p_fusion = 'spread'
            THEN coalesce(p_weight, ranking_weight('vector_spread')) * (1 - coalesce(p_held, 0))
                 * (1 - greatest(0, coalesce(p_agreement, 0)))
            WHEN p_fusion = 'minmax' THEN coalesce(p_weight, ranking_weight('vector_count'))
            ELSE coalesce(p_weight, ranking_weight('vector_weighted')) END;
COMMENT ON FUNCTION fusion_vector_weight(text, double precision, double precision, double precision) IS
    'The vector''s weight in the fusion: p_weight, or the fusion''s own (ranking_weights()); spread '
    'weighs it down as the best lexical match holds more of the query (p_held, 0 to 1) and as the '
    'cosine agrees with the lexical ranking (p_agreement, their correlation).';

CREATE OR REPLACE FUNCTION fused_relevance(p_fusion text, p_lexical double precision, p_vector double precision,
                                           p_vector_weight double precision, p_lexical_rank bigint,
                                           p_vector_rank bigint, p_graph double precision,
                                           p_in_time double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN p_fusion = 'lexical' THEN p_lexical
            WHEN p_fusion = 'vector' THEN coalesce(p_vector, 0)
            WHEN p_fusion = 'rrf'
            THEN ranking_weight('rrf_scale')
                 * (coalesce(1.0 / (ranking_weight('rrf_k') + p_lexical_rank), 0)
                    + coalesce(1.0 / (ranking_weight('rrf_k') + p_vector_rank), 0))
            ELSE ranking_weight('lexical') * p_lexical + p_vector_weight * coalesce(p_vector, 0) END
       + ranking_weight('graph') * p_graph + ranking_weight('in_time') * p_in_time;
COMMENT ON FUNCTION fused_relevance(text, double precision, double precision, double precision, bigint, bigint,
                                    double precision, double precision) IS
    'A memory''s relevance: by p_fusion (lexical or vector alone; rrf from the ranks of the memories '
    'that have each branch, NULL without; otherwise the lexical relevance at its share plus the '
    'normalised vector at p_vector_weight), plus the graph''s expansion and the time range the query '
    'names at their weights.';

CREATE OR REPLACE FUNCTION in_time_range(p_at timestamptz, p_from timestamptz, p_to timestamptz)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN p_from IS NOT NULL AND p_at >= p_from AND (p_to IS NULL OR p_at < p_to) THEN 1.0 ELSE 0.0 END;
COMMENT ON FUNCTION in_time_range(timestamptz, timestamptz, timestamptz) IS
    'Time score of the hybrid ranking: 1 when p_at lies in [p_from, p_to) (p_to NULL: no end), else 0; '
    '0 when no range is given.';

CREATE OR REPLACE FUNCTION memory_recency(p_now timestamptz, p_at timestamptz)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN episodic_recency(greatest(0, extract(epoch FROM p_now - p_at)::float8 / 86400));
COMMENT ON FUNCTION memory_recency(timestamptz, timestamptz) IS
    'Recency of a memory written at p_at, seen at p_now: 1 / (1 + age in days), 1 for a future p_at.';

CREATE OR REPLACE FUNCTION vector_relevance(p_vector double precision, p_in_time double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN fused_relevance('vector', NULL, p_vector, NULL, NULL, NULL, 0, p_in_time);
COMMENT ON FUNCTION vector_relevance(double precision, double precision) IS
    'Relevance of the vector ranking (p_mode vector): the cosine over the best candidate''s, plus the '
    'time range''s weight inside a time range the query names.';

CREATE OR REPLACE FUNCTION ranking_score(p_relevance double precision, p_recency double precision,
                                         p_importance double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN p_relevance + ranking_weight('recency') * p_recency + ranking_weight('importance') * p_importance;
COMMENT ON FUNCTION ranking_score(double precision, double precision, double precision) IS
    'Score of the hybrid ranking: relevance, with recency and importance (each in [0, 1]) at their '
    'weights (ranking_weights()), small enough to break near-ties only.';
