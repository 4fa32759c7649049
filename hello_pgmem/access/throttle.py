"""Failed credentials per client address: guessing costs neither a database lookup nor a hash.

An address whose bearer tokens (or the web view's session cookies and logins) failed
``per_minute`` times in the last minute gets 429 for the rest of that minute. It never shuts out
a valid credential: one that worked recently from anywhere is let through (the server keeps
their SHA-256, at most ``MAX_KNOWN``), and a request that carries no credential at all costs no
lookup and counts for nothing.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from threading import Lock
from typing import Any

MAX_ADDRESSES = 1000  # failure records kept, the most recent addresses
MAX_KNOWN = 10_000  # credentials that worked, the most recent
KNOWN_FOR_S = 3600.0

Credential = Callable[[Any], str | None]
"""What a request carries that a server verifies (from its ASGI scope), or None."""


def digest(credential: str) -> bytes:
    return hashlib.sha256(credential.encode("utf-8", "surrogatepass")).digest()


@dataclass
class FailedTokens:
    """Failed credentials per client address in the last minute, and those that worked."""

    per_minute: int
    _seen: OrderedDict[str, list[float]] = field(default_factory=OrderedDict)
    _known: OrderedDict[bytes, float] = field(default_factory=OrderedDict)
    _lock: Lock = field(default_factory=Lock)

    def _recent(self, client: str, now: float) -> list[float]:
        times = [t for t in self._seen.get(client, []) if now - t < 60]
        self._seen[client] = times
        self._seen.move_to_end(client)
        while len(self._seen) > MAX_ADDRESSES:  # bounded memory, whatever the number of addresses
            self._seen.popitem(last=False)
        return times

    def blocked(self, client: str, now: float | None = None) -> float:
        """Seconds until ``client`` may try an unknown credential again (0: it may)."""
        moment = time.monotonic() if now is None else now
        with self._lock:
            times = self._recent(client, moment)
            return 60 - (moment - times[0]) if len(times) >= self.per_minute else 0.0

    def admits(self, client: str, credential: str | None, now: float | None = None) -> float:
        """Seconds until a request of ``client`` with ``credential`` may go (0: now)."""
        wait = self.blocked(client, now)
        return 0.0 if wait and credential is not None and self.known(credential, now) else wait

    def known(self, credential: str, now: float | None = None) -> bool:
        """Whether ``credential`` worked within the last hour."""
        moment = time.monotonic() if now is None else now
        with self._lock:
            seen = self._known.get(digest(credential))
            return seen is not None and moment - seen < KNOWN_FOR_S

    def failed(self, client: str, now: float | None = None) -> None:
        moment = time.monotonic() if now is None else now
        with self._lock:
            self._recent(client, moment).append(moment)

    def worked(self, credential: str, now: float | None = None) -> None:
        moment = time.monotonic() if now is None else now
        key = digest(credential)
        with self._lock:
            self._known[key] = moment
            self._known.move_to_end(key)
            while len(self._known) > MAX_KNOWN:
                self._known.popitem(last=False)


def bearer_token(scope: Any) -> str | None:
    """The bearer token of a request's Authorization header, or None."""
    for name, value in scope.get("headers") or []:
        if name == b"authorization":
            kind, _, token = value.decode("latin-1").partition(" ")
            return token.strip() or None if kind.lower() == "bearer" else None
    return None


def client_address(scope: Any) -> str:
    return str((scope.get("client") or ("unknown",))[0])


async def too_many(send: Any, wait: float) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 429,
            "headers": [(b"retry-after", b"%d" % (int(wait) + 1)), (b"content-type", b"text/plain")],
        }
    )
    await send({"type": "http.response.body", "body": b"too many failed credentials; retry later\n"})


def throttle_failed_tokens(app: Any, gate: FailedTokens, credential_of: Credential = bearer_token) -> Any:
    """ASGI middleware: a request whose credential fails (401) counts against its address; past the
    limit the address gets 429 for unknown credentials until the minute has passed."""

    async def throttled(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        client, credential = client_address(scope), credential_of(scope)
        wait = gate.admits(client, credential)
        if wait:
            await too_many(send, wait)
            return
        status: list[int] = []

        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
            await send(message)

        await app(scope, receive, watch)
        if credential is None or not status:
            return
        if status[0] == 401:
            gate.failed(client)
        elif status[0] < 400:
            gate.worked(credential)

    return throttled
