"""Episodic memory: events with a session, context, outcome, participants and tags; a session's
episodes in order and the user's sessions."""

from __future__ import annotations

from hello_pgmem.core.models import MemoryItem, MemoryType, SessionInfo
from hello_pgmem.memory import _queries as q
from hello_pgmem.memory._longterm import LongTermMemory
from hello_pgmem.memory._rows import FIELDS, memory_from_row


class EpisodicMemory(LongTermMemory):
    """Events of one user, searchable by meaning, session and time."""

    memory_type: MemoryType = "episodic"

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
