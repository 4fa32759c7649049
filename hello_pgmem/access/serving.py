"""HTTP serving with bounds, for the MCP server and the web view: uvicorn with

- a cap on open connections, in all (4,096) and per client address (64; an IPv6 address counts
  by its /64, what one client is usually given), applied as a connection is accepted (one over
  the cap is closed at once, before anything is read), and a short listen backlog, so that
  asyncio accepts at most ``BACKLOG`` connections before those over the cap are closed: the total
  is kept well under the process's open-file limit, which is raised to its maximum first. A
  flood of connections cannot exhaust the server's files, where asyncio would fail every accept
  and log each failure, and a handful of addresses cannot fill the total;
- time limits on reading each request: 3 s for its request line and headers, 10 s for the whole
  of it: a client that sends half a request and waits is disconnected;
- logs that repeat rate-limited: at most ``LOG_REPEATS`` records of one kind a minute per logger,
  then one line that says how many were left out.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ipaddress
import logging
import resource
import time
from dataclasses import dataclass
from threading import Lock
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

LOG_REPEATS = 10
SERVER_LOGGERS = ("asyncio", "uvicorn.error", __name__)  # where a flood of connections is logged
FILES_RESERVED = 128  # for the database pool, logs and the files a call reads
BACKLOG = 64  # connections asyncio accepts in one go (uvicorn's own default is 2,048)


@dataclass(frozen=True)
class Bounds:
    """What one server lets the network take of it."""

    max_connections: int = 4096
    max_per_address: int = 64  # an IPv6 /64 is one address
    header_read_s: float = 3.0  # to receive a request's line and headers
    request_read_s: float = 10.0  # to receive a request whole, headers and body
    keep_alive_s: int = 5  # an idle connection between requests


class RepeatFilter(logging.Filter):
    """At most ``per_minute`` records of one logger and message template a minute; the next one
    after a quiet spell says how many were left out."""

    def __init__(self, per_minute: int = LOG_REPEATS) -> None:
        super().__init__()
        self.per_minute = per_minute
        self._windows: dict[tuple[str, str], list[float]] = {}  # key: [window start, count, left out]
        self._lock = Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg))
        now = time.monotonic()
        with self._lock:
            start, count, left_out = self._windows.get(key, [now, 0, 0])
            if now - start >= 60:
                start, count = now, 0
            count += 1
            if count > self.per_minute:
                self._windows[key] = [start, count, left_out + 1]
                return False
            self._windows[key] = [start, count, 0]
            if len(self._windows) > 10_000:
                self._windows.clear()
        if left_out:
            record.msg = f"{record.msg} (and {int(left_out)} more like it left out of the log)"
        return True


_FILTER = RepeatFilter()


def limit_repeated_logs() -> None:
    """Rate-limit the records of the loggers a server writes to (once per process)."""
    for name in SERVER_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


def usable_connections(wanted: int) -> int:
    """``wanted``, or fewer where the open-file limit (raised to its maximum) is lower."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError) as exc:  # the soft limit stays, and bounds the connections below
            log.debug("could not raise the open-file limit to %s: %s", hard, exc)
    if soft == resource.RLIM_INFINITY:
        return wanted
    # accepted connections wait a few turns of the event loop before those over the cap are closed
    return max(8, min(wanted, soft - FILES_RESERVED - 4 * BACKLOG))


def client_key(address: str) -> str:
    """What the per-address cap counts a client by: its IPv4 address, or its IPv6 /64 (an IPv4
    address mapped into IPv6 as itself)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def _address(protocol: object) -> str:
    """The client key of one of uvicorn's connections."""
    return getattr(protocol, "_client_key", "")


class BoundedProtocol(H11Protocol):
    """uvicorn's h11 protocol under :class:`Bounds` (``bounds`` set by :func:`bounded_protocol`)."""

    bounds: ClassVar[Bounds] = Bounds()
    _refused = False
    _reading: asyncio.TimerHandle | None = None
    _client_key = ""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        peer = transport.get_extra_info("peername")
        address = client_key(str(peer[0])) if peer else "unknown"
        self._client_key = address
        open_from = sum(1 for c in self.connections if _address(c) == address)
        if len(self.connections) >= self.bounds.max_connections or open_from >= self.bounds.max_per_address:
            self._refused = True
            log.warning(
                "refused a connection from %s: %d open, %d from that address",
                address,
                len(self.connections),
                open_from,
            )
            transport.abort()
            return
        super().connection_made(transport)
        self._start_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refused:
            return
        self._stop_reading()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        super().data_received(data)
        if self.conn.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR):
            self._stop_reading()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is not h11.DONE:
            self._start_reading()  # the next request, on a kept-alive connection

    def _start_reading(self) -> None:
        self._stop_reading()
        self._reading = self.loop.call_later(self.bounds.header_read_s, self._headers_too_long)

    def _stop_reading(self) -> None:
        if self._reading is not None:
            self._reading.cancel()
            self._reading = None

    def _headers_too_long(self) -> None:
        """The headers' time is up: a request still without its headers is cut off; one that has
        them has the rest of the request's time for its body."""
        self._reading = None
        if self.conn.their_state is h11.IDLE:
            log.info("closed a connection from %s: no request line and headers in time", self.client)
            self.transport.close()
            return
        rest = max(0.0, self.bounds.request_read_s - self.bounds.header_read_s)
        self._reading = self.loop.call_later(rest, self._reading_too_long)

    def _reading_too_long(self) -> None:
        self._reading = None
        if self.conn.their_state not in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED):
            log.info("closed a connection from %s: no whole request in time", self.client)
            self.transport.close()


def bounded_protocol(bounds: Bounds) -> type[BoundedProtocol]:
    """The protocol class of a server under ``bounds``."""
    return type("Bounded", (BoundedProtocol,), {"bounds": bounds})


def serve(
    app: Any,
    host: str,
    port: int,
    bounds: Bounds | None = None,
    *,
    certfile: str | None = None,
    keyfile: str | None = None,
    forwarded_allow_ips: str | None = None,
) -> None:
    """Serve ``app`` at ``host:port`` under ``bounds`` until interrupted (HTTPS with ``certfile``).
    ``X-Forwarded-For`` and ``X-Forwarded-Proto`` are believed only from the addresses
    ``forwarded_allow_ips`` names (a comma-separated list, as uvicorn's option): by default from
    none, so no client, not even a local one, picks the address the credential throttle counts."""
    import uvicorn

    limits = bounds or Bounds()
    limits = dataclasses.replace(limits, max_connections=usable_connections(limits.max_connections))
    limit_repeated_logs()
    uvicorn.run(
        app,
        host=host,
        port=port,
        http=bounded_protocol(limits),
        limit_concurrency=limits.max_connections,
        backlog=BACKLOG,
        timeout_keep_alive=limits.keep_alive_s,
        log_level="warning",
        ssl_certfile=certfile,
        ssl_keyfile=keyfile,
        proxy_headers=bool(forwarded_allow_ips),
        forwarded_allow_ips=forwarded_allow_ips or "",
    )
