"""Bearer tokens: made here, stored as their SHA-256 only, resolved in SQL. The MCP server over
HTTP and the web view's login take them.

Tokens are managed by an operator (``hello-pgmem token create|list|revoke``, as the schema owner);
the server, as the application role, resolves a token through ``token_identity`` and never reads
the table. This module owns every statement on ``access_tokens``.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID

from hello_pgmem.access.identity import PERSONAL, Identity, Mode, check_mode, personal_namespace
from hello_pgmem.core.errors import InvalidInputError
from hello_pgmem.core.models import check_name, check_user_id
from hello_pgmem.db import Database

PREFIX = "pgm_"
DEFAULT_LIFETIME = timedelta(days=90)

CREATE = """
INSERT INTO access_tokens (user_id, token_hash, namespaces, label, expires_at, mode, namespace_modes)
VALUES (%(user_id)s, %(hash)s, %(namespaces)s, %(label)s, %(expires_at)s, %(mode)s, %(namespace_modes)s)
RETURNING id, created_at
"""
LIST = """
SELECT id, user_id, namespaces, label, created_at, expires_at, revoked_at, last_used_at, mode,
       namespace_modes
FROM access_tokens
WHERE %(user_id)s::text IS NULL OR user_id = %(user_id)s
ORDER BY user_id, created_at, id
"""
REVOKE = """
UPDATE access_tokens SET revoked_at = now()
WHERE id::text LIKE %(prefix)s || '%%' AND (%(user_id)s::text IS NULL OR user_id = %(user_id)s)
  AND revoked_at IS NULL
RETURNING id
"""
RESOLVE = "SELECT token_id, user_id, namespaces, mode, namespace_modes FROM token_identity(%(hash)s)"


@dataclass(frozen=True)
class TokenInfo:
    """A token as ``token list`` shows it (never the token itself)."""

    id: UUID
    user_id: str
    namespaces: list[str]
    label: str | None
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    last_used_at: datetime | None
    mode: Mode
    namespace_modes: dict[str, Mode]


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8")).digest()


def create_token(
    db: Database,
    user_id: str,
    namespaces: Sequence[str] = (),
    label: str | None = None,
    expires_at: datetime | None = None,
    *,
    mode: Mode = "write",
    namespace_modes: Mapping[str, Mode] | None = None,
    lifetime: timedelta | None = DEFAULT_LIFETIME,
) -> tuple[str, UUID]:
    """A new token for ``user_id`` (shown once: only its hash is kept) and its id.

    It expires at ``expires_at``, else after ``lifetime`` (90 days; None: never). ``mode`` is what
    it may do with the user's memory and its namespaces, ``namespace_modes`` per namespace.
    """
    user = check_user_id(user_id)
    allowed = sorted({check_name(n, "namespace") for n in namespaces})
    if any(n.startswith(PERSONAL) and n != personal_namespace(user) for n in allowed):
        raise InvalidInputError(
            "namespace",
            f"names starting with {PERSONAL!r} are users' own namespaces: a token may name only its "
            f"user's ({personal_namespace(user)!r}), which it uses when given no namespace",
        )
    if label is not None and len(label) > 200:
        raise InvalidInputError("label", "must be at most 200 characters")
    modes = {check_name(n, "namespace"): check_mode(m) for n, m in (namespace_modes or {}).items()}
    if not set(modes) <= set(allowed):
        raise InvalidInputError("namespace_modes", "may only name namespaces the token may use")
    if expires_at is None and lifetime is not None:
        expires_at = datetime.now(UTC) + lifetime
    token = PREFIX + secrets.token_urlsafe(32)
    params = {
        "user_id": user,
        "hash": token_hash(token),
        "namespaces": allowed,
        "label": label,
        "expires_at": expires_at,
        "mode": check_mode(mode),
        "namespace_modes": json.dumps(modes),
    }
    with db.transaction(user) as conn:
        row = conn.execute(CREATE, params).fetchone()
    assert row is not None
    return token, row[0]


def list_tokens(db: Database, user_id: str | None = None) -> list[TokenInfo]:
    """The tokens of one user, or of every user (which needs a role that sees all rows)."""
    user = None if user_id is None else check_user_id(user_id)
    with db.transaction(user, all_rows=user is None) as conn:
        rows = conn.execute(LIST, {"user_id": user}).fetchall()
    return [TokenInfo(*row) for row in rows]


def revoke_token(db: Database, token_id: str, user_id: str | None = None) -> list[UUID]:
    """Revoke the live tokens whose id starts with ``token_id`` (at least 8 characters)."""
    prefix = token_id.strip().lower()
    if len(prefix) < 8 or not all(ch in "0123456789abcdef-" for ch in prefix):
        raise InvalidInputError("token_id", "must be a token id or its first 8 or more characters")
    user = None if user_id is None else check_user_id(user_id)
    with db.transaction(user, all_rows=user is None) as conn:
        return [row[0] for row in conn.execute(REVOKE, {"prefix": prefix, "user_id": user}).fetchall()]


def resolve_token(db: Database, token: str) -> Identity | None:
    """The identity of a live token, or None (unknown, revoked or expired)."""
    if not token.startswith(PREFIX) or len(token) > 200:
        return None
    with db.transaction() as conn:
        row = conn.execute(RESOLVE, {"hash": token_hash(token)}).fetchone()
    if row is None:
        return None
    return Identity(row[1], tuple(row[2]), row[0], row[3], tuple(sorted(row[4].items())))
