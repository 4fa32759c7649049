"""Whole conversations for an agent that wants them: the sessions that best match a query as
whole documents (search_sessions: each session's BM25 as one text and the cosine of its summed
vector) and by their best memory in a memory search, best first, each with the memories that
search found in it and the session itself in the order it was written.
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


SESSION_POOL = 50
"""Sessions ranked as documents before each is given its best memory's score."""
BEST_MEMORY_WEIGHT = 0.5
"""A session's best memory in the memory search, beside its score as a document (docs/search.md)."""


def fused(pool: list[SessionHit], found: Sequence[MemoryItem], limit: int) -> list[SessionHit]:
    """The ``limit`` best sessions by their score as documents (over the best's) plus half their
    best memory's score in ``found`` (over the best's); a session found by the memory search
    alone counts by its memory."""
    best_memory: dict[str, float] = {}
    for item in found:
        if item.session_id is not None:
            best_memory[item.session_id] = max(best_memory.get(item.session_id, 0.0), item.score or 0.0)
    as_documents = {s.session_id: s.score for s in pool}
    top_document = max(as_documents.values(), default=0.0) or 1.0
    top_memory = max(best_memory.values(), default=0.0) or 1.0
    scores = {
        session: as_documents.get(session, 0.0) / top_document
        + BEST_MEMORY_WEIGHT * best_memory.get(session, 0.0) / top_memory
        for session in {*as_documents, *best_memory}
    }
    ranked = sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))[:limit]
    return [SessionHit(session, score) for session, score in ranked]


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
