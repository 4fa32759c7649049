"""Whether a server may face remote callers, and what it checks of every request before the
application sees it.

- The connected role must be one that row-level security binds: servers refuse a superuser, a
  BYPASSRLS role or the schema owner unless told otherwise; the library logs a warning.
- A server on loopback answers only requests that name a loopback host (``Host: 127.0.0.1``,
  ``localhost``, ``[::1]``): a page of another site whose name was made to resolve to 127.0.0.1
  (DNS rebinding) gets 421. A server off loopback checks the names it is given.
- Off loopback without TLS, tokens and session cookies cross the network in clear text: one line
  says so.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import Any

from hello_pgmem.db import Database

PRIVILEGE = """
SELECT r.rolsuper, r.rolbypassrls, n.nspowner = r.oid
FROM pg_roles r LEFT JOIN pg_namespace n ON n.nspname = %(schema)s
WHERE r.rolname = current_user
"""
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) stays on this machine."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


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


def privileged_refusal(privileged: str, serving: str) -> str:
    """The one line a server says when it refuses to serve as a privileged role."""
    return (
        f"refusing to serve {serving} as {privileged}: row-level security would not hold them to their "
        "users; connect as the application role (hello-pgmem grant --app), or pass --allow-privileged-role"
    )


def cleartext_warning(host: str, tls: bool) -> str | None:
    """The one line a server off loopback without TLS says, or None."""
    if tls or is_loopback(host):
        return None
    return (
        f"warning: serving on {host} without TLS: tokens and session cookies cross the network in clear "
        "text (give --certfile and --keyfile, or put a TLS proxy in front)"
    )


def host_name(header: str) -> str:
    """The name of a Host header, without its port (``[::1]:8377`` gives ``::1``)."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def allowed_hosts(bind_host: str, named: Iterable[str] = ()) -> frozenset[str] | None:
    """The Host names a server bound to ``bind_host`` answers: the loopback names on loopback, else
    the names given (with ``bind_host`` when it is one address), or None: every name."""
    names = {host_name(n) for n in named if n.strip()}
    if is_loopback(bind_host):
        return frozenset(names | set(LOOPBACK_NAMES))
    if not names:
        return None
    if bind_host not in ("0.0.0.0", "::", ""):
        names.add(host_name(bind_host))
    return frozenset(names)


def check_host(app: Any, allowed: frozenset[str] | None) -> Any:
    """ASGI middleware: a request whose Host header names no allowed host gets 421."""
    if allowed is None:
        return app

    async def checked(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            headers = dict(scope.get("headers") or [])
            host = headers.get(b"host", b"").decode("latin-1")
            if host_name(host) not in allowed:
                await send(
                    {
                        "type": "http.response.start",
                        "status": 421,
                        "headers": [(b"content-type", b"text/plain"), (b"connection", b"close")],
                    }
                )
                await send({"type": "http.response.body", "body": b"misdirected request: unknown Host\n"})
                return
        await app(scope, receive, send)

    return checked
