-- Revision 0017: erasing a user also takes its tokens; RAG questions are logged under the user
-- who asked, so that erasing the user takes them too.

CREATE FUNCTION erase_user_tokens()
RETURNS TABLE (tokens integer, namespaces text[])
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
BEGIN
    RETURN QUERY
    WITH gone AS (
        DELETE FROM access_tokens t WHERE t.user_id = (SELECT current_memory_user()) RETURNING t.namespaces
    )
    SELECT count(*)::integer, coalesce(array_agg(DISTINCT n ORDER BY n) FILTER (WHERE n IS NOT NULL), '{}')
    FROM gone LEFT JOIN LATERAL unnest(gone.namespaces) AS n ON true;
END $$;
COMMENT ON FUNCTION erase_user_tokens() IS
    'Deletes every token of the transaction''s user (pgmem.user_id); returns how many, and the '
    'namespaces they could use (shared documents that erasing a user leaves in place).';
REVOKE ALL ON FUNCTION erase_user_tokens() FROM PUBLIC;

-- tokens--0017.sql, run after this script, grants it to the roles that may call token_identity.

COMMENT ON TABLE retrieval_log IS
    'What was searched, by whom, which memories or chunks came back with which scores, and how long '
    'it took. Written only when PGMEM_RETRIEVAL_LOG=on; rows older than PGMEM_RETRIEVAL_LOG_DAYS are '
    'purged by hello-pgmem maintain. A RAG search is logged under the user who asked when the '
    'knowledge base knows one (the MCP server, a tool given user_id), else as ''rag:<namespace>''.';
