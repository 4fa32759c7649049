-- Undo revision 0011: the MCP server's tokens go.
DROP FUNCTION token_identity(bytea);
DROP TABLE access_tokens;
