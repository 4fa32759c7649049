-- Undo revision 0017: tokens lose their modes; token_identity answers as revision 0011 defined it,
-- callable by the same roles; erase_user_tokens goes; retrieval_log's comment of revision 0006.
DROP FUNCTION erase_user_tokens();
COMMENT ON TABLE retrieval_log IS
    'What was searched, by whom, which memories or chunks came back with which scores, and how long '
    'it took. Written only when PGMEM_RETRIEVAL_LOG=on; rows older than PGMEM_RETRIEVAL_LOG_DAYS are '
    'purged by hello-pgmem maintain. RAG searches are logged with user_id ''rag:<namespace>''.';
SELECT set_config('pgmem.token_identity_grantees', coalesce(string_agg(a.grantee::regrole::text, ','), ''), true)
FROM pg_proc p, aclexplode(p.proacl) a
WHERE p.oid = 'token_identity(bytea)'::regprocedure AND a.privilege_type = 'EXECUTE'
  AND a.grantee <> p.proowner AND a.grantee <> 0;
DROP FUNCTION token_identity(bytea);
ALTER TABLE access_tokens DROP COLUMN mode, DROP COLUMN namespace_modes;

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

DO $$
DECLARE
    grantee text;
BEGIN
    FOREACH grantee IN ARRAY coalesce(string_to_array(nullif(current_setting('pgmem.token_identity_grantees'), ''), ','), '{}')
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION token_identity(bytea) TO %s', grantee);
    END LOOP;
END
$$;
