-- Undo revision 0018 before search--0014.sql and search--0015.sql restore search_memories and
-- memory_candidates without the session-prefix and metadata filters.
DROP FUNCTION search_memories(text, text, vector, text, integer, text[], text, timestamptz, timestamptz,
                              double precision, text, text, timestamptz, text[], text[], integer,
                              timestamptz, timestamptz, text, text, integer, integer, text, jsonpath, jsonb);
DROP FUNCTION memory_candidates(text, text, vector, integer, text[], text, timestamptz, timestamptz,
                                double precision, text, text, text, jsonpath, jsonb);
