"""What one identity may ask of the MCP server: requests at once, a call's time, a request's
size; and, over HTTP, requests a minute, live sessions, and how many bad tokens one address may
try (:mod:`hello_pgmem.access.throttle`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from threading import Lock


@dataclass(frozen=True)
class Limits:
    """What one identity may ask of the server."""

    calls_per_minute: int = 120  # HTTP: every request of a token (stdio: none counted)
    concurrent_calls: int = 4  # requests of one identity in progress at once
    call_timeout_s: float = 120.0  # the reply, and the work: statements and loops stop at it
    max_request_bytes: int = 1_000_000
    failed_tokens_per_minute: int = 20  # HTTP: bad tokens per client address before 429
    sessions_per_token: int = 16  # HTTP: live MCP sessions of one token (its oldest closed)
    session_idle_s: float = 300.0  # HTTP: a session without a request in flight this long ends
    max_sessions: int = 4096  # HTTP: live MCP sessions in all (503 past it)
    files_root: Path | None = None  # file tools read beneath it: HTTP each user's folder in it (None:
    # none); stdio the folder itself (None: the working directory)


@dataclass
class RateGate:
    """A token bucket per identity: ``calls_per_minute`` calls, refilled continuously."""

    calls_per_minute: int
    _buckets: dict[str, tuple[float, float]] = field(default_factory=dict)
    _lock: Lock = field(default_factory=Lock)

    def allow(self, key: str, now: float | None = None) -> float:
        """0 when the call may go, else the seconds until it may."""
        moment = time.monotonic() if now is None else now
        rate = self.calls_per_minute / 60.0
        with self._lock:
            tokens, last = self._buckets.get(key, (float(self.calls_per_minute), moment))
            tokens = min(float(self.calls_per_minute), tokens + (moment - last) * rate)
            if tokens < 1:
                self._buckets[key] = (tokens, moment)
                return (1 - tokens) / rate
            self._buckets[key] = (tokens - 1, moment)
            return 0.0


@dataclass
class ConcurrencyGate:
    """At most ``limit`` requests of one identity in progress at once."""

    limit: int
    _running: dict[str, int] = field(default_factory=dict)
    _lock: Lock = field(default_factory=Lock)

    def enter(self, key: str) -> bool:
        with self._lock:
            if self._running.get(key, 0) >= self.limit:
                return False
            self._running[key] = self._running.get(key, 0) + 1
            return True

    def hold(self, key: str) -> None:
        """One more in progress, past the limit too: an abandoned call's work that still runs."""
        with self._lock:
            self._running[key] = self._running.get(key, 0) + 1

    def leave(self, key: str) -> None:
        with self._lock:
            left = self._running.get(key, 1) - 1
            if left:
                self._running[key] = left
            else:
                self._running.pop(key, None)


class Refused(Exception):
    """A request the limits turn away, with the text that says why."""
