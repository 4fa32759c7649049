"""Whole conversations for an agent that wants them: the sessions whose memories a search finds,
best first, each with the memories found in it and the session itself in the order it was written.

A session ranks by its best memory. Measured on LongMemEval's dev split (hashing embedder, the
50 best memories of the hybrid search with revision 0020's three-turn context): ranking sessions
by their best memory gave session recall_all@5 82.1 and ndcg_any@5 88.6; by the sum of their
scores 75.6 / 79.7, by their best two 82.9 / 87.5, by the best plus a tenth or three tenths of the
rest 82.1 / 88.2 and 82.9 / 88.2. With the five-turn context of revision 0023, by the best memory:
82.9 / 88.8.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from hello_pgmem.core.models import LONG_TERM_TYPES, MemoryItem, check_limit
from hello_pgmem.memory import queries as q
from hello_pgmem.memory.rows import memory_rows
from hello_pgmem.memory.search import SearchesMemories

MAX_SESSION_MEMORIES = 1000


@dataclass
class SessionHit:
    """A session a search found: its score (its best memory's), the memories found in it (best
    first), and the session's memories in the order they were written (at most ``max_memories``)."""

    session_id: str
    score: float
    hits: list[MemoryItem] = field(default_factory=list)
    memories: list[MemoryItem] = field(default_factory=list)


class SessionSearch(SearchesMemories):
    """The search methods of MemoryManager, with whole sessions."""

    user_id: str

    def retrieve_sessions(
        self,
        query: str,
        limit: int = 3,
        *,
        memory_types: Sequence[str] | None = None,
        candidates: int = 50,
        max_memories: int = 100,
    ) -> list[SessionHit]:
        """The ``limit`` sessions whose long-term memories best match ``query``, found among the
        ``candidates`` best memories, each with its memories in order (at most ``max_memories``)."""
        config = self.parts.config
        limit = check_limit(limit, config.max_search_limit)
        top = check_limit(candidates, config.max_search_limit, "candidates")
        per_session = check_limit(max_memories, MAX_SESSION_MEMORIES, "max_memories")
        kinds: list[str] = [k for k in (memory_types or self.enabled_types) if k in LONG_TERM_TYPES]
        found = self.retrieve_memories(query, memory_types=kinds, limit=top, track_access=False)
        sessions: dict[str, SessionHit] = {}
        for item in found:  # best first: a session's first hit is its best
            if item.session_id is not None:
                hit = sessions.setdefault(item.session_id, SessionHit(item.session_id, item.score or 0.0))
                hit.hits.append(item)
        best = list(sessions.values())[:limit]
        if best:
            params = {
                "user_id": self.user_id,
                "sessions": [s.session_id for s in best],
                "types": kinds,
                "limit": per_session,
            }
            with self.parts.db.transaction(self.user_id) as conn:
                rows = conn.cursor(row_factory=memory_rows(self.user_id)).execute(q.SESSION_MEMORIES, params)
                for memory in rows.fetchall():
                    sessions[str(memory.session_id)].memories.append(memory)
        return best
