-- Revision 0017: what a token may do. mode (read, write, admin) holds for the user's memory and
-- for each of its namespaces that namespace_modes does not name otherwise: read searches and
-- asks, write also adds, updates and removes, admin also clears. Tokens made before keep every
-- power they had (admin); new ones are write unless asked.

ALTER TABLE access_tokens
    ADD COLUMN mode text NOT NULL DEFAULT 'admin',
    ADD COLUMN namespace_modes jsonb NOT NULL DEFAULT '{}',
    ADD CONSTRAINT access_tokens_mode CHECK (mode IN ('read', 'write', 'admin')),
    ADD CONSTRAINT access_tokens_namespace_modes CHECK (
        jsonb_typeof(namespace_modes) = 'object'
        AND NOT jsonb_path_exists(namespace_modes, '$.* ? (@ != "read" && @ != "write" && @ != "admin")'));
ALTER TABLE access_tokens ALTER COLUMN mode SET DEFAULT 'write';
COMMENT ON COLUMN access_tokens.mode IS
    'read, write or admin: for the user''s memory and the namespaces namespace_modes does not name.';
COMMENT ON COLUMN access_tokens.namespace_modes IS 'A mode per namespace, where it differs from mode.';

-- token_identity answers with the modes too; whoever could call it may call the new one, and
-- erase_user_tokens (erase--0017.sql, run before this script).
SELECT set_config('pgmem.token_identity_grantees', coalesce(string_agg(a.grantee::regrole::text, ','), ''), true)
FROM pg_proc p, aclexplode(p.proacl) a
WHERE p.oid = 'token_identity(bytea)'::regprocedure AND a.privilege_type = 'EXECUTE'
  AND a.grantee <> p.proowner AND a.grantee <> 0;
DROP FUNCTION token_identity(bytea);

CREATE FUNCTION token_identity(p_token_hash bytea)
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
REVOKE ALL ON FUNCTION token_identity(bytea) FROM PUBLIC;

DO $$
DECLARE
    grantee text;
BEGIN
    FOREACH grantee IN ARRAY coalesce(string_to_array(nullif(current_setting('pgmem.token_identity_grantees'), ''), ','), '{}')
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION token_identity(bytea), erase_user_tokens() TO %s', grantee);
    END LOOP;
END
$$;
