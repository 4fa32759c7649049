-- A search's filters as one value (memory_filter), the one predicate that applies it to a memory
-- (_passes_filters), and the constructor every caller names its filters by (memory_filter(…)).
-- The type itself is a revision's (alembic/sql/types.sql).
-- Applied by every migration in which this file changed (sql/README.md); tests/test_sql_live.py
-- holds it equal to a migrated database.

CREATE OR REPLACE FUNCTION memory_filter(
    p_memory_types text[] DEFAULT NULL, p_session_id text DEFAULT NULL, p_since timestamptz DEFAULT NULL,
    p_until timestamptz DEFAULT NULL, p_min_importance double precision DEFAULT NULL,
    p_modality text DEFAULT NULL, p_session_prefix text DEFAULT NULL, p_where jsonpath DEFAULT NULL,
    p_where_vars jsonb DEFAULT NULL)
RETURNS memory_filter
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT ROW(p_memory_types, p_session_id, p_since, p_until, p_min_importance, p_modality,
               p_session_prefix, p_where, p_where_vars)::memory_filter
$$;
COMMENT ON FUNCTION memory_filter(text[], text, timestamptz, timestamptz, double precision, text, text,
                                  jsonpath, jsonb) IS
    'A memory search''s filters, named: memory_filter(p_session_id => ''s1'', p_since => …); each left '
    'out keeps every memory.';

CREATE OR REPLACE FUNCTION filter_with_types(p_filter memory_filter, p_memory_types text[])
RETURNS memory_filter
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT memory_filter(p_memory_types, (p_filter).session_id, (p_filter).since, (p_filter).until,
                         (p_filter).min_importance, (p_filter).modality, (p_filter).session_prefix,
                         (p_filter).where_path, (p_filter).where_vars)
$$;
COMMENT ON FUNCTION filter_with_types(memory_filter, text[]) IS
    'The filter p_filter with the types p_memory_types in place of its own (a branch that searches '
    'some of the types by one vector space).';

DROP FUNCTION IF EXISTS _passes_filters(text, text, timestamptz, double precision, text, jsonb, text[], text,
                                        timestamptz, timestamptz, double precision, text, text, jsonpath, jsonb);
CREATE OR REPLACE FUNCTION _passes_filters(
    p_memory_type text, p_session_id text, p_created_at timestamptz, p_importance double precision,
    p_modality text, p_metadata jsonb, p_filter memory_filter)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE  -- inlined where it is called: the planner sees the conditions
AS $$
    SELECT ((p_filter).memory_types IS NULL OR p_memory_type = ANY ((p_filter).memory_types))
       AND ((p_filter).session_id IS NULL OR p_session_id = (p_filter).session_id)
       AND ((p_filter).since IS NULL OR p_created_at >= (p_filter).since)
       AND ((p_filter).until IS NULL OR p_created_at <= (p_filter).until)
       AND ((p_filter).min_importance IS NULL OR p_importance >= (p_filter).min_importance)
       AND ((p_filter).modality IS NULL OR p_modality = (p_filter).modality)
       AND ((p_filter).session_prefix IS NULL OR starts_with(p_session_id, (p_filter).session_prefix))
       AND ((p_filter).where_path IS NULL
            OR jsonb_path_match(p_metadata, (p_filter).where_path, coalesce((p_filter).where_vars, '{}'), true))
$$;
COMMENT ON FUNCTION _passes_filters(text, text, timestamptz, double precision, text, jsonb, memory_filter) IS
    'Internal: whether a memory (its type, session, creation time, importance, modality and metadata) '
    'meets a search''s filters; a NULL filter, or a NULL field of one, keeps every memory. Every '
    'search applies its filters by this one predicate.';

CREATE OR REPLACE FUNCTION _filters_beyond_types(p_filter memory_filter)
RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$
    SELECT num_nonnulls((p_filter).session_id, (p_filter).since, (p_filter).until, (p_filter).min_importance,
                        (p_filter).modality, (p_filter).session_prefix, (p_filter).where_path) > 0
$$;
COMMENT ON FUNCTION _filters_beyond_types(memory_filter) IS
    'Internal: whether a filter keeps memories by more than their type (which a context window '
    'knows): then only the memory''s row can tell.';
