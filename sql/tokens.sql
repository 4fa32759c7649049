-- Access tokens of the MCP server: a token's identity, and a user's tokens erased.
-- Applied by every migration in which this file changed (sql/README.md); tests/test_sql_live.py
-- holds it equal to a migrated database.

CREATE OR REPLACE FUNCTION token_identity(p_token_hash bytea)
RETURNS TABLE (token_id uuid, user_id text, namespaces text[], mode text, namespace_modes jsonb)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
BEGIN
    -- last_used_at is written at most once a minute per token: a request costs no write; a
    -- read-only transaction (the web view) writes nothing
    IF NOT current_setting('transaction_read_only')::boolean THEN
        UPDATE access_tokens t SET last_used_at = now()
        WHERE t.token_hash = p_token_hash AND t.revoked_at IS NULL
          AND (t.expires_at IS NULL OR t.expires_at > now())
          AND (t.last_used_at IS NULL OR t.last_used_at < now() - interval '1 minute');
    END IF;
    RETURN QUERY
    SELECT t.id, t.user_id, t.namespaces, t.mode, t.namespace_modes
    FROM access_tokens t
    WHERE t.token_hash = p_token_hash AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now());
END $$;
COMMENT ON FUNCTION token_identity(bytea) IS
    'The user, namespaces and modes of a live token, given its SHA-256 (no row for an unknown, '
    'revoked or expired token); records its use unless the transaction is read-only. The '
    'application role may call it; it may not read access_tokens.';
REVOKE ALL ON FUNCTION token_identity(bytea) FROM PUBLIC;

CREATE OR REPLACE FUNCTION erase_user_tokens()
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
