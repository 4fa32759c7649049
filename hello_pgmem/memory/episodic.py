"""Episodic memory: events with a session, context, outcome, participants and tags.

Retrieval is hybrid by default (SQL ``search_memories``: BM25 of the episode, its neighbours and
its session, cosine similarity, a speaker the query names, relevance first). With
``scoring="reference"`` it is the reference's ``search_episodic``: filters and vector similarity
in one query, a pool of limit × 5, score ``(vec × 0.8 + recency × 0.2) × importance weight``;
when that vector search finds nothing, keyword matching takes over as in the reference.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import numpy as np

from hello_pgmem.core.models import MemoryItem, MemoryType, Scoring, SessionInfo
from hello_pgmem.memory import queries as q
from hello_pgmem.memory import ranked_queries as rq
from hello_pgmem.memory.longterm import LongTermMemory
from hello_pgmem.memory.rows import FIELDS, memory_from_row


class EpisodicMemory(LongTermMemory):
    """Events of one user, searchable by meaning, session and time."""

    memory_type: MemoryType = "episodic"

    def retrieve(
        self,
        query: str,
        limit: int = 5,
        *,
        vector: np.ndarray | None = None,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        min_importance: float | None = None,
        scoring: Scoring | None = None,
    ) -> list[MemoryItem]:
        """Ranked episodes; each carries its score and components.

        Hybrid scoring (the default) is ``search_memories``; ``scoring="reference"`` is the
        reference's ``(vector × 0.8 + recency × 0.2) × importance weight`` (``search_episodic``).
        """
        if not self.uses_reference(scoring):
            filters: dict[str, Any] = {
                "session_id": session_id,
                "since": since,
                "until": until,
                "min_importance": min_importance,
            }
            return self.search(query, limit, vector=vector, scoring=scoring, **filters)
        found = self.ranked(
            rq.SEARCH_EPISODIC,
            query,
            vector,
            limit=limit,
            session_id=session_id,
            since=since,
            until=until,
            min_importance=min_importance,
        )
        return found or self.keyword_search(
            query, limit, session_id=session_id, since=since, until=until, min_importance=min_importance
        )

    def session_episodes(self, session_id: str, limit: int = 1000) -> list[MemoryItem]:
        """A session's episodes in time order (what resuming a conversation needs)."""
        params = {"user_id": self.user_id, "session_id": session_id, "limit": limit}
        with self.db.transaction(self.user_id) as conn:
            rows = conn.execute(q.SESSION_EPISODES, params).fetchall()
        return [memory_from_row(self.user_id, FIELDS, row) for row in rows]

    def sessions(self, limit: int = 100) -> list[SessionInfo]:
        """The user's sessions, most recent first."""
        with self.db.transaction(self.user_id) as conn:
            rows = conn.execute(q.SESSIONS, {"user_id": self.user_id, "limit": limit}).fetchall()
        return [SessionInfo(session_id=r[0], episodes=r[1], first_at=r[2], last_at=r[3]) for r in rows]
