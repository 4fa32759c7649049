"""Decay: forgetting a user's memories least worth keeping beyond a maximum (SQL ``apply_decay``)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from hello_pgmem.core.models import utcnow
from hello_pgmem.db import Conn, Database
from hello_pgmem.memory import queries as q


def apply_decay(conn: Conn, user_id: str, max_memories: int, now: datetime) -> int:
    """Forget the lowest ``retention_score`` memories beyond ``max_memories``; how many (caller's tx)."""
    row = conn.execute(
        q.APPLY_DECAY, {"user_id": user_id, "max_memories": max_memories, "now": now}
    ).fetchone()
    return int(row[0]) if row else 0


class MemoryDecay:
    """Evict a user's least worth keeping memories beyond a maximum (one SQL statement)."""

    def __init__(self, db: Database, clock: Callable[[], datetime] | None = None) -> None:
        self.db = db
        self.clock = clock or utcnow

    def apply_decay(self, user_id: str, max_memories: int) -> int:
        """Forget the lowest ``retention_score`` memories beyond ``max_memories``; how many."""
        with self.db.transaction(user_id) as conn:
            return apply_decay(conn, user_id, max_memories, self.clock())
