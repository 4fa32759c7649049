"""Who is looking: one fixed identity on loopback (``--user`` / ``--namespace``), or the identity
of a bearer token given once at the login form.

A login opens a session of the view's own: the browser holds a random session id in an HttpOnly,
``SameSite=Strict`` cookie (Secure under TLS), never the token; the server keeps the token for the
session (in memory, at most ``MAX_SESSIONS`` in all and ``SESSIONS_PER_TOKEN`` per token, a
token's oldest closed first, for ``SESSION_LIFETIME_S``) and resolves it again at every request
(``token_identity``, in a read-only transaction: nothing is recorded), so a revoked or expired
token stops working at once, and logging out ends the session. A token logs in at most
``LOGINS_PER_MINUTE`` times a minute: one tenant cannot churn the view's sessions.
"""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from threading import Lock

from starlette.requests import Request
from starlette.responses import Response

from hello_pgmem.access import Identity, resolve_token
from hello_pgmem.db import Database

COOKIE = "pgmem_ui_session"
SESSION_LIFETIME_S = 8 * 3600
MAX_SESSIONS = 10_000
SESSIONS_PER_TOKEN = 20
LOGINS_PER_MINUTE = 10


@dataclass
class Sessions:
    """Open sessions: a random id to the token it was opened with; a token's oldest dropped first
    past ``SESSIONS_PER_TOKEN``, everyone's oldest past ``MAX_SESSIONS``."""

    lifetime_s: float = SESSION_LIFETIME_S
    per_token: int = SESSIONS_PER_TOKEN
    logins_per_minute: int = LOGINS_PER_MINUTE
    _open: OrderedDict[str, tuple[str, float]] = field(default_factory=OrderedDict)
    _by_token: dict[str, list[str]] = field(default_factory=dict)
    _logins: dict[str, list[float]] = field(default_factory=dict)
    _lock: Lock = field(default_factory=Lock)

    def open(self, token: str) -> str:
        session = secrets.token_urlsafe(32)
        with self._lock:
            self._open[session] = (token, time.monotonic())
            mine = self._by_token.setdefault(token, [])
            mine.append(session)
            while len(mine) > self.per_token:
                self._open.pop(mine.pop(0), None)
            while len(self._open) > MAX_SESSIONS:
                oldest, (owner, _) = self._open.popitem(last=False)
                self._forget(owner, oldest)
        return session

    def login_wait(self, token: str, now: float | None = None) -> float:
        """0 when ``token`` may log in now (and the login is counted), else the seconds until it may."""
        moment = time.monotonic() if now is None else now
        with self._lock:
            recent = [t for t in self._logins.get(token, []) if moment - t < 60]
            if len(recent) >= self.logins_per_minute:
                self._logins[token] = recent
                return 60 - (moment - recent[0])
            self._logins[token] = [*recent, moment]
            if len(self._logins) > MAX_SESSIONS:
                self._logins = {k: v for k, v in self._logins.items() if moment - v[-1] < 60}
            return 0.0

    def _forget(self, token: str, session: str) -> None:
        mine = self._by_token.get(token)
        if mine is not None:
            if session in mine:
                mine.remove(session)
            if not mine:
                del self._by_token[token]

    def token(self, session: str) -> str | None:
        with self._lock:
            found = self._open.get(session)
            if found is None:
                return None
            if time.monotonic() - found[1] > self.lifetime_s:
                del self._open[session]
                self._forget(found[0], session)
                return None
            return found[0]

    def close(self, session: str) -> None:
        with self._lock:
            found = self._open.pop(session, None)
            if found is not None:
                self._forget(found[0], session)


@dataclass
class Login:
    """How the application learns its viewer: ``fixed`` for local use, else sessions of tokens."""

    fixed: Identity | None = None
    secure_cookie: bool = False
    sessions: Sessions = field(default_factory=Sessions)

    def identity(self, db: Database, request: Request) -> Identity | None:
        """The viewer of ``request``, or None when it must log in."""
        if self.fixed is not None:
            return self.fixed
        session = request.cookies.get(COOKIE)
        token = self.sessions.token(session) if session else None
        return None if token is None else identity_of_token(db, token)

    def session(self, request: Request) -> str | None:
        """The session cookie ``request`` came with (valid or not), or None."""
        return None if self.fixed is not None else request.cookies.get(COOKIE) or None

    def start(self, response: Response, token: str) -> str:
        """Open a session for ``token``, set its cookie on ``response``; the session id."""
        session = self.sessions.open(token)
        response.set_cookie(
            COOKIE,
            session,
            max_age=int(self.sessions.lifetime_s),
            httponly=True,
            samesite="strict",
            secure=self.secure_cookie,
        )
        return session

    def end(self, request: Request, response: Response) -> None:
        session = request.cookies.get(COOKIE)
        if session:
            self.sessions.close(session)
        response.delete_cookie(COOKIE, httponly=True, samesite="strict", secure=self.secure_cookie)


def identity_of_token(db: Database, token: str) -> Identity | None:
    """The token's identity, or None for an unknown, revoked or expired token."""
    return resolve_token(db, token.strip())
