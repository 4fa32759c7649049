"""Whole conversations for an agent that wants them: the sessions that best match a query as
whole documents (search_sessions: each session's BM25 as one text and the cosine of its summed
vector), best first, each with the memories a search found in it and the session itself in the
order it was written.
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
    """A session a search found: its score, the memories a memory search found in it (best first),
    and the session's memories in the order they were written (at most ``max_memories``)."""

    session_id: str
    score: float
    hits: list[MemoryItem] = field(default_factory=list)
    memories: list[MemoryItem] = field(default_factory=list)


def ranked_sessions(parts: MemoryParts, query: str, limit: int) -> list[SessionHit]:
    """The ``limit`` sessions that best match ``query`` as whole documents, best first."""
    embedder = parts.registered_embedder
    params = {
        "user_id": parts.user_id,
        "model": embedder.model_name,
        "query": embedder.encode_query(query),
        "query_text": query,
        "limit": limit,
    }
    with parts.db.transaction(parts.user_id) as conn:
        rows = conn.execute(q.SEARCH_SESSIONS, params).fetchall()
    return [SessionHit(str(row[0]), float(row[1])) for row in rows]


def whole_sessions(
    parts: MemoryParts,
    best: list[SessionHit],
    found: Sequence[MemoryItem],
    kinds: Sequence[str],
    per_session: int,
) -> list[SessionHit]:
    """``best`` with the memories among ``found`` that belong to each (best first), and each
    session's memories of ``kinds`` in the order they were written (at most ``per_session``)."""
    sessions = {s.session_id: s for s in best}
    for item in found:
        if item.session_id in sessions:
            sessions[item.session_id].hits.append(item)
    if best:
        params = {
            "user_id": parts.user_id,
            "sessions": list(sessions),
            "types": list(kinds),
            "limit": per_session,
        }
        with parts.db.transaction(parts.user_id) as conn:
            rows = conn.cursor(row_factory=memory_rows(parts.user_id)).execute(q.SESSION_MEMORIES, params)
            for memory in rows.fetchall():
                sessions[str(memory.session_id)].memories.append(memory)
    return best
