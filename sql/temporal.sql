-- Facts with two clocks: what held at a time (valid time), as the store knew it at a time
-- (recorded time). Applied by every migration in which this file changed (sql/README.md);
-- tests/test_sql_live.py holds it equal to a migrated database.

CREATE OR REPLACE FUNCTION holds_as_of(p_from timestamptz, p_to timestamptz, p_recorded timestamptz,
                                       p_superseded timestamptz, p_valid_at timestamptz,
                                       p_known_at timestamptz)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN p_from <= p_valid_at AND (p_to IS NULL OR p_to > p_valid_at)
       AND p_recorded <= p_known_at AND (p_superseded IS NULL OR p_superseded > p_known_at);
COMMENT ON FUNCTION holds_as_of(timestamptz, timestamptz, timestamptz, timestamptz, timestamptz, timestamptz) IS
    'Whether a row valid over [p_from, p_to) and recorded over [p_recorded, p_superseded) held at '
    'p_valid_at as the store knew it at p_known_at (open ends: NULL).';

CREATE OR REPLACE FUNCTION memory_as_of(p_from timestamptz, p_to timestamptz, p_recorded timestamptz,
                                        p_superseded timestamptz, p_forgotten timestamptz,
                                        p_version_of uuid, p_valid_at timestamptz, p_known_at timestamptz)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN holds_as_of(p_from, p_to, p_recorded, p_superseded, p_valid_at, p_known_at)
       AND (p_version_of IS NOT NULL OR p_forgotten IS NULL OR p_forgotten > p_known_at);
COMMENT ON FUNCTION memory_as_of(timestamptz, timestamptz, timestamptz, timestamptz, timestamptz, uuid, timestamptz, timestamptz) IS
    'holds_as_of for a memory row: a memory forgotten by p_known_at is not remembered then (an '
    'earlier version is retired by being one, not forgotten).';

CREATE OR REPLACE FUNCTION memories_as_of(p_user_id text, p_valid_at timestamptz DEFAULT now(),
                                          p_known_at timestamptz DEFAULT now())
RETURNS TABLE (memory_id uuid, version_id uuid, memory_type text, content text, importance double precision,
               session_id text, valid_from timestamptz, valid_to timestamptz, recorded_at timestamptz,
               superseded_at timestamptz)
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    SELECT coalesce(m.version_of, m.id), m.id, m.memory_type, m.content, m.importance, m.session_id,
           m.created_at, m.valid_to, m.recorded_at, m.superseded_at
    FROM memories m
    WHERE m.user_id = p_user_id
      AND memory_as_of(m.created_at, m.valid_to, m.recorded_at, m.superseded_at, m.forgotten_at,
                       m.version_of, p_valid_at, p_known_at)
    ORDER BY m.created_at, m.seq
$$;
COMMENT ON FUNCTION memories_as_of(text, timestamptz, timestamptz) IS
    'The long-term memories of a user that held at p_valid_at, as the store knew them at p_known_at '
    '(both default to now: the current truth as currently known), one version each.';

CREATE OR REPLACE FUNCTION relations_as_of(p_user_id text, p_valid_at timestamptz DEFAULT now(),
                                           p_known_at timestamptz DEFAULT now())
RETURNS TABLE (source text, relation_type text, target text, memory_id uuid, valid_from timestamptz,
               valid_to timestamptz, recorded_at timestamptz, superseded_at timestamptz)
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    SELECT s.name, r.relation_type, t.name, r.memory_id, r.valid_from, r.valid_to, r.recorded_at,
           r.superseded_at
    FROM relations r
    JOIN entities s ON s.user_id = r.user_id AND s.id = r.source_id
    JOIN entities t ON t.user_id = r.user_id AND t.id = r.target_id
    WHERE r.user_id = p_user_id
      AND holds_as_of(r.valid_from, r.valid_to, r.recorded_at, r.superseded_at, p_valid_at, p_known_at)
    ORDER BY s.name, r.relation_type, t.name, r.valid_from
$$;
COMMENT ON FUNCTION relations_as_of(text, timestamptz, timestamptz) IS
    'The relations of a user''s graph that held at p_valid_at, as the store knew them at p_known_at '
    '(both default to now), with their clocks.';

DROP FUNCTION IF EXISTS search_memories_as_of(text, text, vector, text, integer, text[], timestamptz, timestamptz,
                                             double precision, text, jsonpath, jsonb);
CREATE OR REPLACE FUNCTION search_memories_as_of(p_user_id text, p_model text, p_query vector,
                                                 p_query_text text, p_limit integer, p_filter memory_filter,
                                                 p_valid_at timestamptz, p_known_at timestamptz)
RETURNS TABLE (id uuid, memory_type text, content text, importance double precision, session_id text,
               modality text, metadata jsonb, created_at timestamptz, vector_score double precision,
               text_score double precision, recency_score double precision,
               importance_weight double precision, score double precision)
LANGUAGE sql STABLE
SET search_path FROM CURRENT
SET jit = off  -- compiling costs more than running (docs/search.md)
AS $$
    WITH visible AS (
        SELECT m.id, m.memory_type, m.content, m.importance, m.session_id, m.modality, m.metadata,
               m.created_at, m.lexemes,
               CASE WHEN m.embedding_model = p_model THEN 1 - (m.embedding <=> p_query) ELSE 0 END AS cosine
        FROM memories m
        WHERE m.user_id = p_user_id
          AND _passes_filters(m.memory_type, m.session_id, m.created_at, m.importance, m.modality, m.metadata,
                              p_filter)
          AND memory_as_of(m.created_at, m.valid_to, m.recorded_at, m.superseded_at, m.forgotten_at,
                           m.version_of, p_valid_at, p_known_at)
    ), ranked AS (
        SELECT v.*, coalesce(ts_rank_cd(v.lexemes, terms_query(query_terms(p_query_text))), 0)::float8 AS rank
        FROM visible v
    ), scored AS (
        SELECT r.*,
               coalesce(greatest(r.cosine, 0) / nullif(max(greatest(r.cosine, 0)) OVER (), 0), 0) AS v_score,
               coalesce(r.rank / nullif(max(r.rank) OVER (), 0), 0) AS t_score,
               memory_recency(p_valid_at, r.created_at) AS recency
        FROM ranked r
    )
    SELECT s.id, s.memory_type, s.content, s.importance, s.session_id, s.modality, s.metadata,
           s.created_at, s.v_score, s.t_score, s.recency, importance_weight(s.importance),
           ranking_score(s.t_score + ranking_weight('vector_weighted') * s.v_score, s.recency, s.importance)
    FROM scored s
    ORDER BY 13 DESC, s.importance DESC, s.id
    LIMIT p_limit
$$;
COMMENT ON FUNCTION search_memories_as_of(text, text, vector, text, integer, memory_filter, timestamptz,
                                          timestamptz) IS
    'Search the memories that held at p_valid_at as known at p_known_at and meet p_filter (memory_filter): '
    'text rank (ts_rank_cd over the query''s terms) plus the weighted fusion''s vector weight '
    '(ranking_weights()) x cosine, each over its best among them, with recency (seen from p_valid_at) '
    'and importance breaking near-ties. Reads every memory of the user; the session, neighbour and '
    'graph signals of search_memories, which describe the present, are not used.';
