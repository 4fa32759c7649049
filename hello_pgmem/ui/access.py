"""Who is looking: one fixed user on loopback (``--user`` / ``--namespace``), or the user of a
bearer token of the MCP server, given once at the login form and kept in an HttpOnly cookie.

The token is resolved again at every request (``token_identity``, in a read-only transaction:
nothing is recorded), so a revoked or expired token stops working at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from hello_pgmem.db import Database
from hello_pgmem.mcp_server.tokens import resolve_token
from hello_pgmem.ui.reads import Viewer

COOKIE = "pgmem_ui_token"
COOKIE_LIFETIME_S = 8 * 3600


@dataclass(frozen=True)
class Access:
    """How the application learns its viewer: ``fixed`` for local use, else tokens."""

    fixed: Viewer | None = None
    secure_cookie: bool = False

    def viewer(self, db: Database, request: Request) -> Viewer | None:
        """The viewer of ``request``, or None when it must log in."""
        if self.fixed is not None:
            return self.fixed
        token = request.cookies.get(COOKIE)
        return None if not token else viewer_of_token(db, token)

    def holds_token(self, request: Request) -> bool:
        """Whether ``request`` came with a token (valid or not)."""
        return self.fixed is None and bool(request.cookies.get(COOKIE))

    def remember(self, response: Response, token: str) -> None:
        response.set_cookie(
            COOKIE,
            token,
            max_age=COOKIE_LIFETIME_S,
            httponly=True,
            samesite="strict",
            secure=self.secure_cookie,
        )

    def forget(self, response: Response) -> None:
        response.delete_cookie(COOKIE, httponly=True, samesite="strict", secure=self.secure_cookie)


def viewer_of_token(db: Database, token: str) -> Viewer | None:
    """The token's user and namespaces (its own user's namespace when it names none, as the MCP
    server does), or None for an unknown, revoked or expired token."""
    identity = resolve_token(db, token.strip())
    if identity is None:
        return None
    return Viewer(identity.user_id, identity.namespaces or (identity.user_id,))
