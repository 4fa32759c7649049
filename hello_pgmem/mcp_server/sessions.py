"""Every HTTP request of a token against its rate, and its live MCP sessions capped.

The SDK's session manager keeps a session from its ``initialize`` until the client deletes it or
it has been idle for ``Limits.session_idle_s``; it counts no request and caps sessions only in
all. :class:`SessionGuard` sits in front of it, after the bearer token is verified:

- every request is counted against the token's rate (``initialize``, notifications, the event
  stream and ``DELETE`` too, not only tool calls); one over the rate that would open a session or
  is not a POST gets 429 at once; any other (inside a session, or of the protocol's stateless
  revisions, which keep no session) is marked, so that a tool call comes back as a tool result
  that says when to retry (:meth:`PgMemServer.admitted`);
- a token keeps at most ``Limits.sessions_per_token`` live sessions: opening one more closes its
  oldest.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict, deque
from collections.abc import MutableMapping
from threading import Lock
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Receive, Send

from hello_pgmem.mcp_server.limits import RateGate

log = logging.getLogger(__name__)

SESSION_HEADER = b"mcp-session-id"
VERSION_HEADER = b"mcp-protocol-version"
RATE_WAIT = "pgmem_rate_wait"  # the scope's state: seconds a request inside a session must wait
MAX_TOKENS = 10_000  # tokens whose sessions are followed, the most recent


def token_key(scope: MutableMapping[str, Any]) -> str | None:
    """What a verified request is counted by: its token's id (its user without one); None when
    the request carries no verified token."""
    user = scope.get("user")
    if not isinstance(user, AuthenticatedUser):
        return None
    token = user.access_token
    return token.subject or token.client_id


def rate_wait(scope: MutableMapping[str, Any]) -> float:
    """The seconds :class:`SessionGuard` found this request over its token's rate (0: within)."""
    return float(scope.get("state", {}).get(RATE_WAIT, 0.0))


def header(headers: list[tuple[bytes, bytes]], wanted: bytes) -> str | None:
    for name, value in headers:
        if name.lower() == wanted:
            return value.decode("latin-1")
    return None


class SessionGuard:
    """ASGI middleware in front of the SDK's streamable HTTP endpoint."""

    def __init__(self, app: ASGIApp, gate: RateGate, manager: Any, sessions_per_token: int) -> None:
        self.app = app
        self.gate = gate
        self.manager = manager
        self.sessions_per_token = sessions_per_token
        self._sessions: OrderedDict[str, deque[str]] = OrderedDict()
        self._lock = Lock()

    async def __call__(self, scope: MutableMapping[str, Any], receive: Receive, send: Send) -> None:
        key = token_key(scope) if scope["type"] == "http" else None
        if key is None:  # no token: the SDK answers 401
            await self.app(scope, receive, send)
            return
        headers = scope.get("headers", [])
        version = header(headers, VERSION_HEADER)
        sessions_era = version is None or version in HANDSHAKE_PROTOCOL_VERSIONS  # else stateless
        opening = sessions_era and header(headers, SESSION_HEADER) is None
        wait = self.gate.allow(key)
        if wait and (opening or scope.get("method") != "POST"):
            await self.refuse(send, wait)
            return
        scope.setdefault("state", {})[RATE_WAIT] = wait
        if not opening:
            await self.app(scope, receive, send)
            return

        async def watch(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                session = header(message.get("headers", []), SESSION_HEADER)
                if session is not None:
                    await self.opened(key, session)
            await send(message)

        await self.app(scope, receive, watch)

    async def opened(self, key: str, session: str) -> None:
        """Count ``session`` as the token's newest, and close its oldest past the cap."""
        with self._lock:
            live = self._sessions.pop(key, deque())
            live = deque(s for s in live if s in self.live_sessions())
            live.append(session)
            oldest = [live.popleft() for _ in range(max(0, len(live) - self.sessions_per_token))]
            self._sessions[key] = live
            while len(self._sessions) > MAX_TOKENS:
                self._sessions.popitem(last=False)
        for old in oldest:
            await self.close(old)

    def live_sessions(self) -> dict[str, Any]:
        """The SDK's open sessions by id (its manager's own table: the SDK has no public one)."""
        sessions: dict[str, Any] = self.manager._server_instances
        return sessions

    async def close(self, session: str) -> None:
        """End one session as a client's DELETE would: its id answers 404 from now on."""
        transport = self.live_sessions().get(session)
        if transport is not None:
            log.info("closed the oldest MCP session of a token over its cap of %d", self.sessions_per_token)
            await transport.terminate()

    @staticmethod
    async def refuse(send: Send, wait: float) -> None:
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": -32000,
                    "message": f"rate: over this token's requests a minute; retry in {wait:.0f}s",
                },
            }
        ).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"retry-after", str(max(1, round(wait))).encode()),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({"type": "http.response.start", "status": 429, "headers": headers})
        await send({"type": "http.response.body", "body": body})
