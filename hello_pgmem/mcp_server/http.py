"""The MCP server over streamable HTTP: bearer tokens of this database, the limits, uvicorn."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import anyio
from mcp.shared.exceptions import MCPError
from starlette.routing import Route

from hello_pgmem.access import Identity, check_mode, resolve_token
from hello_pgmem.access.serving import serve
from hello_pgmem.access.throttle import FailedTokens, bearer_token, throttle_failed_tokens
from hello_pgmem.db import Database
from hello_pgmem.mcp_server.limits import Limits
from hello_pgmem.mcp_server.server import INVALID_PARAMS, PgMemServer
from hello_pgmem.mcp_server.sessions import SessionGuard

MCP_PATH = "/mcp"
SCOPE_PREFIX = "namespace:"
MODE_PREFIX = "mode:"
NAMESPACE_MODE_PREFIX = "namespace-mode:"


class DatabaseTokens:
    """The MCP SDK's token verifier over ``access_tokens`` (through ``token_identity``)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        identity = await anyio.to_thread.run_sync(resolve_token, self.db, token)
        if identity is None:
            return None
        scopes = [SCOPE_PREFIX + n for n in identity.namespaces]
        scopes += [MODE_PREFIX + identity.mode]
        scopes += [f"{NAMESPACE_MODE_PREFIX}{mode}:{n}" for n, mode in identity.namespace_modes]
        return AccessToken(
            token=token, client_id=identity.user_id, scopes=scopes, subject=str(identity.token_id)
        )


def token_identity(ctx: Any) -> Identity:
    """The identity of an HTTP request, from the token its bearer middleware verified."""
    request = getattr(ctx, "request", None)
    user = request.scope.get("user") if request is not None else None
    token = getattr(user, "access_token", None)
    if token is None:  # the middleware lets no request through without one: a bug if it did
        raise MCPError(INVALID_PARAMS, "no verified bearer token")
    namespaces = tuple(s.removeprefix(SCOPE_PREFIX) for s in token.scopes if s.startswith(SCOPE_PREFIX))
    modes = [check_mode(s.removeprefix(MODE_PREFIX)) for s in token.scopes if s.startswith(MODE_PREFIX)]
    per_namespace = tuple(
        sorted(
            (name, check_mode(mode))
            for mode, name in (
                s.removeprefix(NAMESPACE_MODE_PREFIX).split(":", 1)
                for s in token.scopes
                if s.startswith(NAMESPACE_MODE_PREFIX)
            )
        )
    )
    token_id = UUID(token.subject) if token.subject else None
    return Identity(token.client_id, namespaces, token_id, modes[0] if modes else "read", per_namespace)


def http_app(db: Database, public_url: str, limits: Limits | None = None, host: str = "127.0.0.1") -> Any:
    """The streamable HTTP application: bearer tokens required, limits applied.

    Tokens are made by ``hello-pgmem token create``: there is no OAuth authorization server, so
    none is advertised (no protected-resource metadata, a plain ``WWW-Authenticate: Bearer``).
    """
    from mcp.server.auth.settings import AuthSettings

    limits = limits or Limits()
    server = PgMemServer(db, token_identity, limits, remote=True)
    app = server.server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        auth=AuthSettings(issuer_url=public_url.rstrip("/"), resource_server_url=None),  # type: ignore[arg-type]
        token_verifier=DatabaseTokens(db),
        max_request_body_size=limits.max_request_bytes,
        session_idle_timeout=limits.session_idle_s,
        max_sessions=limits.max_sessions,
        host=host,
    )
    for route in app.routes:  # behind the token check, before the SDK's sessions
        if isinstance(route, Route) and route.path == MCP_PATH:
            route.app = SessionGuard(
                route.app, server.gate, server.server.session_manager, limits.sessions_per_token
            )
    return throttle_failed_tokens(app, FailedTokens(limits.failed_tokens_per_minute), bearer_token)


def serve_http(
    db: Database,
    host: str,
    port: int,
    limits: Limits | None = None,
    public_url: str | None = None,
    *,
    certfile: str | None = None,
    keyfile: str | None = None,
    forwarded_allow_ips: str | None = None,
) -> None:
    """Serve over streamable HTTP at ``http(s)://host:port/mcp`` until interrupted (HTTPS with
    ``certfile`` and ``keyfile``), with the connections and request times bounded
    (:mod:`hello_pgmem.access.serving`); proxy headers believed only from ``forwarded_allow_ips``."""
    scheme = "https" if certfile else "http"
    app = http_app(db, public_url or f"{scheme}://{host}:{port}", limits, host)
    serve(app, host, port, certfile=certfile, keyfile=keyfile, forwarded_allow_ips=forwarded_allow_ips)
