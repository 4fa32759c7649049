"""Whom a request works for: one user, the knowledge-base namespaces it may use, and what it may do.

The MCP server, the web view and the command line all describe the holder of a request this way:
over HTTP the identity of a bearer token, on a machine's own terminal or loopback the user the
command was started for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal
from uuid import UUID

from hello_pgmem.core.errors import InvalidInputError

Mode = Literal["read", "write", "admin"]
MODES: tuple[Mode, ...] = ("read", "write", "admin")  # each may do what the one before may, and more
PERSONAL = "user:"
"""The prefix of personal namespaces: a token given none gets ``user:<its user>``, a name no
shared namespace of a token may take."""


def personal_namespace(user_id: str) -> str:
    """The namespace of a user's own documents."""
    return PERSONAL + user_id


def check_mode(value: object, field_name: str = "mode") -> Mode:
    for mode in MODES:
        if value == mode:
            return mode
    raise InvalidInputError(field_name, f"must be one of {', '.join(MODES)}")


@dataclass(frozen=True)
class Identity:
    """One user, the RAG namespaces it may use, and what it may do (``mode`` for the user's memory
    and every namespace ``namespace_modes`` does not name). ``token_id`` is the bearer token's,
    None for a local user."""

    user_id: str
    namespaces: tuple[str, ...] = ()
    token_id: UUID | None = None
    mode: Mode = "admin"
    namespace_modes: tuple[tuple[str, Mode], ...] = field(default=())

    @property
    def knowledge(self) -> tuple[str, ...]:
        """The namespaces it uses: those it was given, else its personal one."""
        return self.namespaces or (personal_namespace(self.user_id),)

    def mode_of(self, namespace: str | None = None) -> Mode:
        """The mode for the user's memory (None) or for one namespace."""
        return dict(self.namespace_modes).get(namespace, self.mode) if namespace else self.mode

    def may(self, needed: Mode, namespace: str | None = None) -> bool:
        return MODES.index(self.mode_of(namespace)) >= MODES.index(needed)
