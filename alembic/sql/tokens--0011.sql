-- Revision 0011: access tokens for the MCP server over HTTP. A token maps to one user and the RAG
-- namespaces it may use; only its SHA-256 is stored, never the token. The application role does
-- not read the table: it calls token_identity, which answers for one hash at a time.

CREATE TABLE access_tokens (
    user_id      text NOT NULL,
    id           uuid NOT NULL DEFAULT gen_random_uuid(),
    token_hash   bytea NOT NULL,
    namespaces   text[] NOT NULL DEFAULT '{}',
    label        text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    revoked_at   timestamptz,
    last_used_at timestamptz,
    CONSTRAINT access_tokens_pkey PRIMARY KEY (user_id, id),
    CONSTRAINT access_tokens_user_id CHECK (btrim(user_id) <> '' AND length(user_id) <= 255),
    CONSTRAINT access_tokens_hash CHECK (length(token_hash) = 32),
    CONSTRAINT access_tokens_label CHECK (label IS NULL OR length(label) <= 200)
);
CREATE UNIQUE INDEX access_tokens_hash ON access_tokens (token_hash);
COMMENT ON TABLE access_tokens IS
    'Bearer tokens of the MCP server: the SHA-256 of each token, its user and the namespaces it may '
    'use; hello-pgmem token create|list|revoke manages them.';

ALTER TABLE access_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE access_tokens FORCE ROW LEVEL SECURITY;
CREATE POLICY user_rows ON access_tokens USING (user_id = (SELECT current_memory_user()))
    WITH CHECK (user_id = (SELECT current_memory_user()));
CREATE POLICY all_rows ON access_tokens TO CURRENT_USER USING ((SELECT all_rows_requested()))
    WITH CHECK ((SELECT all_rows_requested()));
-- token_identity runs as the owner and must find a token before anyone knows whose it is
CREATE POLICY token_lookup ON access_tokens FOR SELECT TO CURRENT_USER USING (true);
CREATE POLICY token_use ON access_tokens FOR UPDATE TO CURRENT_USER USING (true) WITH CHECK (true);

CREATE FUNCTION token_identity(p_token_hash bytea)
RETURNS TABLE (token_id uuid, user_id text, namespaces text[])
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
    SELECT t.id, t.user_id, t.namespaces
    FROM access_tokens t
    WHERE t.token_hash = p_token_hash AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now());
END $$;
COMMENT ON FUNCTION token_identity(bytea) IS
    'The user and namespaces of a live token, given its SHA-256 (no row for an unknown, revoked or '
    'expired token). The application role may call it; it may not read access_tokens.';
REVOKE ALL ON FUNCTION token_identity(bytea) FROM PUBLIC;
