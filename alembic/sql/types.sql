-- The schema's composite types: a memory search's filters (memory_filter) and a hit of the hybrid
-- search (memory_hit). Each is made where the schema has none: revision 0001 runs this before the
-- files of sql/ (whose functions take and return them), revision 0008 for schemas made before it.
-- A change of a type's fields is a revision of its own (ALTER TYPE), and this file follows it.

DO $$
BEGIN
    IF to_regtype('memory_filter') IS NULL THEN
        CREATE TYPE memory_filter AS (
            memory_types   text[],            -- the types searched (NULL: every type)
            session_id     text,              -- one session
            since          timestamptz,       -- created at or after
            until          timestamptz,       -- created at or before
            min_importance double precision,  -- importance at least
            modality       text,              -- a perceptual memory's modality
            session_prefix text,              -- sessions whose id starts with it (a namespace)
            where_path     jsonpath,          -- a predicate on the metadata
            where_vars     jsonb              -- the predicate's variables
        );
    END IF;
    IF to_regtype('memory_hit') IS NULL THEN
        CREATE TYPE memory_hit AS (
            id                uuid,
            memory_type       text,
            content           text,
            importance        double precision,
            session_id        text,
            modality          text,
            metadata          jsonb,
            created_at        timestamptz,
            vector_score      double precision,  -- each component on its 0-1 scale
            text_score        double precision,  -- BM25 of the memory's own text
            context_score     double precision,  -- of its context window
            session_score     double precision,  -- of its session
            speaker_score     double precision,  -- 1 when the query names its speaker
            graph_score       double precision,  -- the knowledge graph's expansion
            time_score        double precision,  -- 1 inside the time range the query names
            recency_score     double precision,
            importance_weight double precision,
            score             double precision   -- what the hits are ordered by
        );
    END IF;
END $$;

COMMENT ON TYPE memory_filter IS
    'The filters of a memory search, each NULL when it keeps every memory: the types, a session or '
    'session prefix, a time range of creation, a least importance, a modality, and a jsonpath '
    'predicate on the metadata with its variables. Made by memory_filter(…), applied by _passes_filters.';
COMMENT ON TYPE memory_hit IS
    'A hit of the hybrid search, the row search_memories and search_memories_by_vector return: the '
    'memory''s fields, each ranking component on its 0-1 scale, and the score the hits are ordered by.';
