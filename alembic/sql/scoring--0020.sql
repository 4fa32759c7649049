-- The per-memory arithmetic of the ranking, in one place: search_memories and the lean vector
-- statement of hello_pgmem.memory.ranked_queries both call these, and the planner inlines them.

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
RETURN p_vector + 0.2 * p_in_time;
COMMENT ON FUNCTION vector_relevance(double precision, double precision) IS
    'Relevance of the vector ranking (p_mode vector): the cosine over the best candidate''s, plus 0.2 '
    'inside a time range the query names.';

CREATE OR REPLACE FUNCTION ranking_score(p_relevance double precision, p_recency double precision,
                                         p_importance double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN p_relevance + 0.01 * p_recency + 0.01 * p_importance;
COMMENT ON FUNCTION ranking_score(double precision, double precision, double precision) IS
    'Score of the hybrid ranking: relevance, with recency and importance (each in [0, 1]) breaking '
    'near-ties, at most 0.02 together.';
