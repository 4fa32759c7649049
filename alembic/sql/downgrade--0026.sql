-- Undo revision 0026: search_memories plans with the caller's settings again.
ALTER FUNCTION search_memories(text, text, vector, text, integer, text[], text, timestamptz, timestamptz, double precision, text, text, timestamptz, text[], text[], integer, timestamptz, timestamptz, text, text, integer, integer, text, jsonpath, jsonb)
    RESET enable_sort
    RESET enable_seqscan;
