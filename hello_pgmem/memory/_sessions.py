"""Whole conversations for an agent that wants them: the sessions whose memories a search finds,
best first, each with the memories found in it and the session itself in the order it was written.

A session ranks by its best memory. Measured on LongMemEval's dev split (hashing embedder, the
50 best memories of the hybrid search): ranking sessions by their best memory gave session
recall_all@5 82.9 and ndcg_any@5 88.8; by the sum of their scores, by their best two, or by the
best plus a tenth or three tenths of the rest, no better (docs/search.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from hello_pgmem.core.models import MemoryItem
from hello_pgmem.memory import _queries as q
from hello_pgmem.memory._parts import MemoryParts
from hello_pgmem.memory._rows import memory_rows


@dataclass
class SessionHit:
    """A session a search found: its score (its best memory's), the memories found in it (best
    first), and the session's memories in the order they were written (at most ``max_memories``)."""

    session_id: str
    score: float
    hits: list[MemoryItem] = field(default_factory=list)
    memories: list[MemoryItem] = field(default_factory=list)


def whole_sessions(
    parts: MemoryParts, found: Sequence[MemoryItem], limit: int, kinds: Sequence[str], per_session: int
) -> list[SessionHit]:
    """The ``limit`` best sessions among ``found`` (best first: a session's first hit is its best),
    each with its memories of ``kinds`` in the order they were written (at most ``per_session``)."""
    sessions: dict[str, SessionHit] = {}
    for item in found:
        if item.session_id is not None:
            hit = sessions.setdefault(item.session_id, SessionHit(item.session_id, item.score or 0.0))
            hit.hits.append(item)
    best = list(sessions.values())[:limit]
    if best:
        params = {
            "user_id": parts.user_id,
            "sessions": [s.session_id for s in best],
            "types": list(kinds),
            "limit": per_session,
        }
        with parts.db.transaction(parts.user_id) as conn:
            rows = conn.cursor(row_factory=memory_rows(parts.user_id)).execute(q.SESSION_MEMORIES, params)
            for memory in rows.fetchall():
                sessions[str(memory.session_id)].memories.append(memory)
    return best
