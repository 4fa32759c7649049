-- Undo revision 0021: token_identity as revision 0017 wrote it.

CREATE OR REPLACE FUNCTION token_identity(p_token_hash bytea)
RETURNS TABLE (token_id uuid, user_id text, namespaces text[], mode text, namespace_modes jsonb)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
BEGIN
    -- last_used_at is written at most once a minute per token: a request costs no write
    UPDATE access_tokens t SET last_used_at = now()
    WHERE t.token_hash = p_token_hash AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())
      AND (t.last_used_at IS NULL OR t.last_used_at < now() - interval '1 minute');
    RETURN QUERY
    SELECT t.id, t.user_id, t.namespaces, t.mode, t.namespace_modes
    FROM access_tokens t
    WHERE t.token_hash = p_token_hash AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now());
END $$;
COMMENT ON FUNCTION token_identity(bytea) IS
    'The user, namespaces and modes of a live token, given its SHA-256 (no row for an unknown, '
    'revoked or expired token). The application role may call it; it may not read access_tokens.';
