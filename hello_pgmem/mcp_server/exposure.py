"""Whether a server may face remote callers: the connected role must be one that row-level
security binds, and loopback addresses are the ones that stay on this machine. Used by the MCP
server over HTTP and by the web view; imports nothing of the MCP SDK."""

from __future__ import annotations

from hello_pgmem.db import Database

PRIVILEGE = """
SELECT r.rolsuper, r.rolbypassrls, n.nspowner = r.oid
FROM pg_roles r LEFT JOIN pg_namespace n ON n.nspname = %(schema)s
WHERE r.rolname = current_user
"""
LOOPBACK = ("127.0.0.1", "::1", "localhost")


def privileged_role(db: Database) -> str | None:
    """Why the connected role must not serve remote callers (row-level security does not bind
    it), or None for an application role."""
    with db.connection() as conn:
        row = conn.execute(PRIVILEGE, {"schema": db.settings.schema_name}).fetchone()
    if row is None:
        return None
    superuser, bypass, owner = row
    if superuser:
        return "a superuser"
    if bypass:
        return "a BYPASSRLS role"
    if owner:
        return f"the owner of schema {db.settings.schema_name!r}"
    return None
