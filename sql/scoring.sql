-- Scoring formulas of the HelloAgents memory chapter and the decay of long-term memories.
-- Applied by every migration in which this file changed (sql/README.md); tests/test_sql_live.py
-- holds it equal to a migrated database.

CREATE OR REPLACE FUNCTION _require_range(p_value double precision, p_name text,
                               p_low double precision, p_high double precision)
RETURNS double precision
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    IF p_value IS NULL OR NOT (p_value >= p_low AND p_value <= p_high) THEN
        RAISE EXCEPTION '% must be a number between % and %, got %',
            p_name, p_low, p_high, coalesce(p_value::text, 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN p_value;
END $$;
COMMENT ON FUNCTION _require_range(double precision, text, double precision, double precision) IS
    'Internal: return p_value if it lies in [p_low, p_high], else raise 22023 naming p_name.';

CREATE OR REPLACE FUNCTION _require_text(p_value text, p_name text)
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    IF p_value IS NULL OR btrim(p_value) = '' THEN
        RAISE EXCEPTION '% must be a non-empty string', p_name USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN p_value;
END $$;
COMMENT ON FUNCTION _require_text(text, text) IS
    'Internal: return p_value if it is a non-blank text, else raise 22023 naming p_name.';

CREATE OR REPLACE FUNCTION _require_choice(p_value text, p_name text, p_choices text[])
RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    IF p_value IS NULL OR NOT p_value = ANY (p_choices) THEN
        RAISE EXCEPTION '% must be % or %, got %', p_name,
            array_to_string(p_choices[1:cardinality(p_choices) - 1], ', '), p_choices[cardinality(p_choices)],
            coalesce(quote_literal(p_value), 'NULL')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN p_value;
END $$;
COMMENT ON FUNCTION _require_choice(text, text, text[]) IS
    'Internal: return p_value if it is one of p_choices, else raise 22023 naming p_name.';

CREATE OR REPLACE FUNCTION importance_weight(importance double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN 0.8 + _require_range(importance, 'importance', 0, 1) * 0.4;
COMMENT ON FUNCTION importance_weight(double precision) IS
    'Importance weight 0.8 + importance * 0.4, in [0.8, 1.2]; importance must be in [0, 1].';

CREATE OR REPLACE FUNCTION working_time_decay(hours double precision, decay_factor double precision DEFAULT 0.95)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN greatest(0.1, power(_require_range(decay_factor, 'decay_factor', 0, 1),
                           _require_range(hours, 'hours', 0, 1e308) / 6.0));
COMMENT ON FUNCTION working_time_decay(double precision, double precision) IS
    'Working-memory time decay max(0.1, decay_factor ^ (hours / 6)); hours since the memory was '
    'written (>= 0), decay_factor in [0, 1], 0.95 by default.';

CREATE OR REPLACE FUNCTION episodic_recency(age_days double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN 1.0 / (1.0 + _require_range(age_days, 'age_days', 0, 1e308));
COMMENT ON FUNCTION episodic_recency(double precision) IS
    'Episodic recency 1 / (1 + age_days), in (0, 1]; age_days >= 0.';

CREATE OR REPLACE FUNCTION perceptual_recency(age_hours double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN greatest(0.1, exp(-0.1 * _require_range(age_hours, 'age_hours', 0, 1e308) / 24.0));
COMMENT ON FUNCTION perceptual_recency(double precision) IS
    'Perceptual recency max(0.1, exp(-0.1 * age_hours / 24)), in [0.1, 1]; age_hours >= 0.';

CREATE OR REPLACE FUNCTION _weighted_score(vector_score double precision, vector_weight double precision,
                                           other double precision, other_name text,
                                           importance double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (_require_range(vector_score, 'vector_score', -1, 1) * vector_weight
        + _require_range(other, other_name, 0, 1) * (1 - vector_weight)) * importance_weight(importance);
COMMENT ON FUNCTION _weighted_score(double precision, double precision, double precision, text, double precision) IS
    'Internal: (vector_score * vector_weight + other * (1 - vector_weight)) * importance_weight, '
    'vector_score in [-1, 1] and other (named other_name in errors) in [0, 1].';

CREATE OR REPLACE FUNCTION episodic_score(vector_score double precision, recency double precision,
                               importance double precision)
RETURNS double precision LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN _weighted_score(vector_score, 0.8, recency, 'recency', importance);
COMMENT ON FUNCTION episodic_score(double precision, double precision, double precision) IS
    'Episodic (and perceptual) score (vector_score * 0.8 + recency * 0.2) * importance_weight; '
    'vector_score is the cosine similarity in [-1, 1], recency in [0, 1].';

CREATE OR REPLACE FUNCTION semantic_score(vector_score double precision, graph_score double precision,
                               importance double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN _weighted_score(vector_score, 0.7, graph_score, 'graph_score', importance);
COMMENT ON FUNCTION semantic_score(double precision, double precision, double precision) IS
    'Semantic score (vector_score * 0.7 + graph_score * 0.3) * importance_weight; graph_score in [0, 1].';

CREATE OR REPLACE FUNCTION working_priority(importance double precision, time_decay double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN _require_range(importance, 'importance', 0, 1) * _require_range(time_decay, 'time_decay', 0, 1);
COMMENT ON FUNCTION working_priority(double precision, double precision) IS
    'Working-memory eviction priority importance * time_decay: the lowest is evicted first.';

CREATE OR REPLACE FUNCTION working_score(tfidf double precision, keyword double precision,
                              time_decay double precision, importance double precision)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (CASE WHEN _require_range(tfidf, 'tfidf', 0, 1) > 0
             THEN tfidf * 0.7 + _require_range(keyword, 'keyword', 0, 1) * 0.3
             ELSE _require_range(keyword, 'keyword', 0, 1) END)
       * _require_range(time_decay, 'time_decay', 0, 1) * importance_weight(importance);
COMMENT ON FUNCTION working_score(double precision, double precision, double precision, double precision) IS
    'Working-memory score: (tfidf * 0.7 + keyword * 0.3, or keyword alone when tfidf is 0) '
    '* time_decay * importance_weight; all inputs in [0, 1].';

CREATE OR REPLACE FUNCTION retention_score(importance double precision, last_accessed_at timestamptz,
                                access_count integer, p_now timestamptz)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN _require_range(importance, 'importance', 0, 1) * 0.4
     + (CASE WHEN last_accessed_at IS NULL THEN 0.5
             ELSE greatest(0, 1 - extract(epoch FROM p_now - last_accessed_at)::float8 / 86400 / 365) END) * 0.4
     + least(1, greatest(0, coalesce(access_count, 0)) / 10.0) * 0.2;
COMMENT ON FUNCTION retention_score(double precision, timestamptz, integer, timestamptz) IS
    'How much a memory deserves to stay: importance * 0.4 + time_decay * 0.4 + frequency_bonus * 0.2, '
    'time_decay = max(0, 1 - days since last access / 365) (0.5 if never accessed), '
    'frequency_bonus = min(1, access_count / 10).';

CREATE OR REPLACE FUNCTION memory_similarity(p_type text, p_embedding_model text, p_embedding vector,
                                             p_text_model text, p_text_embedding vector, p_model text,
                                             p_query vector, p_space text)
RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN (p_space = 'embedding' OR p_space = 'text' AND p_type <> 'perceptual')
                 AND p_embedding_model = p_model THEN 1 - (p_embedding <=> p_query)
            WHEN (p_space = 'text_embedding' OR p_space = 'text' AND p_type = 'perceptual')
                 AND p_text_model = p_model THEN 1 - (p_text_embedding <=> p_query)
            ELSE 0 END;
COMMENT ON FUNCTION memory_similarity(text, text, vector, text, vector, text, vector, text) IS
    'Cosine similarity of a memory to the query vector of p_model in the space searched (p_space '
    'text: the embedding, or the description''s for a perceptual memory; embedding; text_embedding); '
    '0 when the memory has no vector of that model there.';
