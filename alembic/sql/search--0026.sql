-- Revision 0026: search_memories plans with sorts and sequential scans allowed, whatever the
-- transaction that calls it says. The library's plain vector statement forbids both in its own
-- transaction, to keep the one plan it reuses for every user an index scan, and calls
-- search_memories from there when an HNSW scan comes back short.

ALTER FUNCTION search_memories(text, text, vector, text, integer, text[], text, timestamptz, timestamptz, double precision, text, text, timestamptz, text[], text[], integer, timestamptz, timestamptz, text, text, integer, integer, text, jsonpath, jsonb)
    SET enable_sort = on
    SET enable_seqscan = on;
