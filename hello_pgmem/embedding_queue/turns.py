"""Whose turn it is at a process's embedding workers: start-time fair queuing over the characters
embedded for each user and namespace, so that tenants take turns by the work done for them,
whoever queued first or most."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hello_pgmem.embedding_queue.queries import Kind

BACKLOG_SCOPES = 256
"""Scopes with due work a pass looks at, the longest waiting first."""

_WORK: dict[tuple[str, Kind, str], float] = {}
"""Per model and scope, the work this process's workers claimed for it (characters, each text
counted up to what the model takes in one part): the scope with the least goes next."""
_CLOCK: dict[str, float] = {}
"""Per model, the work the last scope served had when its turn came: a scope new to the turns,
or back after a while without work, starts there (it gains no credit for the time it had none)."""


def in_turn(model: str, backlog: Sequence[Any]) -> list[tuple[float, Kind, str]]:
    """The scopes of ``backlog`` (kind, scope, due) in the order of their turns, each with the work
    it starts at: the least work done first, then the longest waiting (the backlog's order)."""
    clock = _CLOCK.get(model, 0.0)
    tagged = [(max(_WORK.get((model, kind, scope), 0.0), clock), kind, scope) for kind, scope, _ in backlog]
    return sorted(tagged, key=lambda turn: turn[0])  # stable: the longest waiting first among equals


def served(model: str, kind: Kind, scope: str, start: float, work: float, backlog: Sequence[Any]) -> None:
    """A scope took its turn at ``start`` and was given ``work``; the work of scopes without work
    is forgotten once the map grows past the backlog (one forgotten starts at the clock when it
    comes back, as a new one does)."""
    _CLOCK[model] = start
    _WORK[(model, kind, scope)] = start + work
    if len(_WORK) > 4 * BACKLOG_SCOPES:
        keep = {(model, k, s) for k, s, _ in backlog}
        for key in [key for key in list(_WORK) if key not in keep]:
            _WORK.pop(key, None)
